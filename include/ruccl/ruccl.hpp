// ruccl: collective communication for CPU and GPU clusters. The umbrella header.
#pragma once

#include "ruccl/bounded.hpp"
#include "ruccl/communicator.hpp"
#include "ruccl/config.hpp"
#include "ruccl/device.hpp"
#include "ruccl/session.hpp"
#include "ruccl/status.hpp"
#include "ruccl/tensor.hpp"
#include "ruccl/types.hpp"
