"""The SimPy core: pipes, routing policies, sockets, transports, workloads. No I/O, no zmq."""
