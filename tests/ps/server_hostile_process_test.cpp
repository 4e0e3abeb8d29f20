// issue 37's demonstrations against a gradwire-ps-server process (filled in next).
