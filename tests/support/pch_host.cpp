// The target that owns the tests' precompiled header (tests/CMakeLists.txt); it runs nothing.
int main() { return 0; }
