// A test of ddp goes through the walls as every other test: src/ddp is on no include path, so its
// headers are not found by their bare names (tests reach them as "ddp/...", gradwire_ddp_internal).
#include "bucket_assignment.h"
