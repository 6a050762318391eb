/*
 * zcal_codes.h - the codes of the zcal ABI's enumerated fields (scope,
 * method, verdict, reason, depth class) and libzcal's names for them.
 *
 * Part of the ABI of zcal.h, which includes it; a separate header so that
 * code which needs only the codes and their names (zcal's pure calibrator,
 * tools) does not take the reader's system headers (<sys/socket.h>) with
 * them. C11 and valid C++; needs nothing beyond <stdint.h>. Link with
 * `pkg-config --libs zcal` for the name functions.
 */
#ifndef ZCAL_ZCAL_CODES_H
#define ZCAL_ZCAL_CODES_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* zcal_shm_entry.scope: which traffic an entry applies to. */
#define ZCAL_SCOPE_HOST_DEFAULT 0 /**< anything without a better match */
#define ZCAL_SCOPE_LOOPBACK 1     /**< peers at 127.0.0.0/8, ::1 */
#define ZCAL_SCOPE_PEER 2         /**< peers within address/prefix_len */
#define ZCAL_SCOPE_INTERFACE 3    /**< traffic leaving `interface` */
/** (minor 1) The discard path: the sender's own costs with real zerocopy
 *  completions, measured in a private namespace. For people and tools;
 *  zcal_lookup never answers with it (it is no traffic's path). */
#define ZCAL_SCOPE_DISCARD 4

/* Send methods (zcal::calibrator::Method). */
#define ZCAL_METHOD_COPY 0
#define ZCAL_METHOD_MSG_ZEROCOPY 1
#define ZCAL_METHOD_URING_SEND 2
#define ZCAL_METHOD_URING_SEND_ZC 3
#define ZCAL_METHOD_URING_SEND_ZC_FIXED 4

/* Verdicts (zcal::calibrator::Verdict). */
#define ZCAL_VERDICT_THRESHOLD 0    /**< zerocopy from threshold_bytes on */
#define ZCAL_VERDICT_ALWAYS 1       /**< zerocopy at every size */
#define ZCAL_VERDICT_NEVER 2        /**< never zerocopy; see reason */
#define ZCAL_VERDICT_INCONCLUSIVE 3 /**< the agent could not decide */

/* Reasons (zcal::calibrator::Reason). */
#define ZCAL_REASON_NONE 0
#define ZCAL_REASON_SLOWER 1
#define ZCAL_REASON_KERNEL_COPIED 2
#define ZCAL_REASON_UNSUPPORTED 3
#define ZCAL_REASON_FAILED 4
#define ZCAL_REASON_NOISY 5
#define ZCAL_REASON_NO_BASELINE 6

/* zcal_shm_entry.depth_class (minor 2): how many zerocopy sends of one
 * connection were in flight when the entry was measured. The code of a
 * class is its depth; 0 is a bulk stream (as many as the probe's 2 MiB of
 * buffers: 32 sends of 64 KiB, more of smaller ones), which is what a
 * minor-0/1 writer's zeroed field says. A reader skips an entry whose code
 * it does not know. For each scope and method the stream entry comes
 * before the others of its scope and method (docs/shm-abi.md). */
#define ZCAL_DEPTH_STREAM 0 /**< a bulk stream; every scope and method has it */
#define ZCAL_DEPTH_1 1      /**< one in flight: each send waits for the last */
#define ZCAL_DEPTH_4 4
#define ZCAL_DEPTH_16 16
/** A connection with this many sends in flight or more is a stream. */
#define ZCAL_DEPTH_STREAM_FROM 32u
/** Depth classes a reader of this header knows, the stream included. */
#define ZCAL_DEPTH_CLASSES 4

/** Lower-case names for tools: "msg_zerocopy", "threshold", "slower",
 *  "peer"...; "unknown" for codes this reader does not know. */
const char *zcal_method_name(uint8_t method);
const char *zcal_verdict_name(uint8_t verdict);
const char *zcal_reason_name(uint8_t reason); /* "" for ZCAL_REASON_NONE */
const char *zcal_scope_name(uint8_t scope); /* "discard" from minor 1 */
/** (libzcal 1.2) "stream", "1", "4", "16"; "unknown" for other codes. */
const char *zcal_depth_name(uint16_t depth_class);

#ifdef __cplusplus
}
#endif

#endif /* ZCAL_ZCAL_CODES_H */
