"""Loss accounting of connections: what a closing, broken or conflating connection does
to the messages it holds, each written to the ledger exactly once.

``in_flight`` lists what one direction of a tcp/ipc link holds outside the pipes (the
sender's batch, the kernel, the reader's buffers) so that a broken connection, the end of
the run and the occupancy tables all count the same messages.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..context import Context
from ..fates import RULE_CONFLATED, WHERE_ENGINE, WHERE_KERNEL
from ..pipe import MSG_ID, Message, Pipe

if TYPE_CHECKING:  # pragma: no cover
    from ..socket import Socket
    from .engine import Engine, Wire


def record_lost(ctx: Context, msgs: Any, socket_index: int, pipe_index: int, rule: int) -> None:
    """Ledger every user message of ``msgs`` as lost."""
    _record(ctx.ledger.lost, ctx.clock.now, msgs, socket_index, pipe_index, rule)


def record_discarded(ctx: Context, msgs: Any, socket_index: int, pipe_index: int, rule: int) -> int:
    """Ledger every user message of ``msgs`` as discarded; returns how many."""
    return _record(ctx.ledger.discarded, ctx.clock.now, msgs, socket_index, pipe_index, rule)


def _record(write: Any, now: float, msgs: Any, socket_index: int, pipe_index: int, rule: int) -> int:
    count = 0
    for msg in msgs:
        if msg[MSG_ID] >= 0:  # control messages (subscriptions) are not copies
            write(msg, socket_index, pipe_index, rule, now)
            count += 1
    return count


def drop_displaced(ctx: Context, pipe: Pipe, owner: Socket) -> None:
    """A conflating pipe (``ypipe_conflate_t``) pushes out its older message: ledger it as
    dropped by its writer, rule ``conflated``."""

    def displaced(msg: Message) -> None:
        if msg[MSG_ID] >= 0:
            owner.dropped += 1
            ctx.ledger.dropped(msg, owner.index, pipe.index, RULE_CONFLATED, ctx.clock.now)

    pipe.on_displace = displaced


def wire_messages(wire: Wire, reader: Engine | None) -> list[Message]:
    """Messages with bytes in the kernel, excluding those the reader already holds and
    those whose tail is still in the writer's batch (the writer accounts for them)."""
    seen: list[Message] = []
    ids: set[int] = set()
    writer = wire.writer
    if writer is not None:
        for entry in writer.out_batch:
            ids.add(id(entry[0]))
    if reader is not None:
        for msg in reader.undecoded():
            ids.add(id(msg))
    for msg, _nbytes, _last, _overhead in wire.queue:
        key = id(msg)
        if key in ids:
            continue
        ids.add(key)
        seen.append(msg)
    return seen


def in_flight(engine: Engine, wire: Any) -> list[tuple[Message, Socket, int, int]]:
    """What one direction of a link holds outside the pipes, each message once:
    (message, socket it is charged to, that socket's pipe index, WHERE_ENGINE or WHERE_KERNEL).

    The reader's buffers (held message, read buffer, partial message) and the kernel queue
    are charged to the reading socket, the sender's unwritten batch to the sending one. A
    message can straddle them; it is listed once, where its first byte is.
    """
    seen: set[int] = set()
    items: list[tuple[Message, Socket, int, int]] = []
    reader = wire.reader
    if reader is not None:
        rsock = reader.session.socket
        rpipe = reader.session.in_pipe.index if reader.session.in_pipe is not None else -1
        buffered = ([reader.held] if reader.held is not None else []) + list(reader.in_buffer)
        if reader.partial is not None:
            buffered.append(reader.partial)
        for msg in buffered:
            if id(msg) not in seen:
                seen.add(id(msg))
                items.append((msg, rsock, rpipe, WHERE_ENGINE))
        for msg, _nbytes, _last, _overhead in wire.queue:
            if id(msg) not in seen:
                seen.add(id(msg))
                items.append((msg, rsock, rpipe, WHERE_KERNEL))
    ssock = engine.session.socket
    spipe = engine.session.out_pipe.index if engine.session.out_pipe is not None else -1
    for entry in engine.out_batch:
        msg = entry[0]
        if id(msg) not in seen:
            seen.add(id(msg))
            items.append((msg, ssock, spipe, WHERE_ENGINE))
    return items
