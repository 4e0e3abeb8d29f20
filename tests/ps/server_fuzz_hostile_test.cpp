// Hostile shared references, batches and attempt numbers on both transports (filled in next).
