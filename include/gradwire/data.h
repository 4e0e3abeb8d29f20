// RecordIO data: writing and reading RecordIO files, reading a set of them split across the ranks
// of a job, the DistributedSampler, IDX (Fashion-MNIST) conversion and file inspection
// (docs/data.md). Link gradwire::data (find_package(gradwire COMPONENTS data)).
#pragma once

#include "gradwire/data/distributed_sampler.h"
#include "gradwire/data/idx_convert.h"
#include "gradwire/data/image_records.h"
#include "gradwire/data/recordio_inspect.h"
#include "gradwire/data/recordio_reader.h"
#include "gradwire/data/recordio_writer.h"
#include "gradwire/data/sharded_reader.h"
#include "gradwire/data/shared_counter.h"
#include "gradwire/data/store_counter.h"
