// ps/messages offers its header through gradwire_ps_messages_internal only.
#include "ps/messages/service_messages.h"
