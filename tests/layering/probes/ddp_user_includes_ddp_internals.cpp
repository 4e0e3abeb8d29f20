// ddp's pure parts are internal ("ddp/...", gradwire_ddp_internal): a user of gradwire_ddp does not
// see them.
#include "ddp/bucket_assignment.h"
