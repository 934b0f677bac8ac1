// The faulty transport: RUCCL_FAULT's drop and corrupt faults as a decorator
// of the transport an executor (TransportRun) sends through, so that neither
// the transport nor the executors know about fault injection.
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

#include "core/fault.hpp"
#include "transport/transport.hpp"

namespace ruccl::world {

// Forwards every call to `inner`. In exchange(), a send of global rank `rank`
// hit by a fault of the plan (its collective is the op's seq, its step the
// tag's step field, i.e. the run's step modulo 2^12):
//   drop     the message is not sent;
//   corrupt  a copy with one payload bit flipped is sent under the checksum
//            of the original (SendOp::checksum), so a receiver that checks
//            payloads finds it; an empty message is sent under a wrong
//            checksum instead.
// Both outlive the decorator; `plan` is only read.
std::unique_ptr<transport::Transport> make_faulty_transport(transport::Transport& inner,
                                                            const core::FaultPlan& plan,
                                                            std::size_t rank);

// Whether the plan holds any drop or corrupt fault (else no decorator is needed).
bool has_send_faults(const core::FaultPlan& plan);

}  // namespace ruccl::world
