/* The header compiled as C11: its _Static_asserts hold, and the offsets C
 * computes are handed to the C++ test to compare with its own. */
#include <stddef.h>

#include <zcal/zcal.h>

const size_t zcal_test_c_layout[] = {
    sizeof(struct zcal_shm_header),
    offsetof(struct zcal_shm_header, magic),
    offsetof(struct zcal_shm_header, abi_major),
    offsetof(struct zcal_shm_header, abi_minor),
    offsetof(struct zcal_shm_header, header_size),
    offsetof(struct zcal_shm_header, entry_size),
    offsetof(struct zcal_shm_header, capacity),
    offsetof(struct zcal_shm_header, seq),
    offsetof(struct zcal_shm_header, generation),
    offsetof(struct zcal_shm_header, publish_time_ns),
    offsetof(struct zcal_shm_header, heartbeat_ns),
    offsetof(struct zcal_shm_header, count),
    offsetof(struct zcal_shm_header, flags),
    offsetof(struct zcal_shm_header, agent_pid),
    offsetof(struct zcal_shm_header, created_ns),
    offsetof(struct zcal_shm_header, reserved),
    sizeof(struct zcal_shm_entry),
    offsetof(struct zcal_shm_entry, scope),
    offsetof(struct zcal_shm_entry, method),
    offsetof(struct zcal_shm_entry, verdict),
    offsetof(struct zcal_shm_entry, reason),
    offsetof(struct zcal_shm_entry, family),
    offsetof(struct zcal_shm_entry, prefix_len),
    offsetof(struct zcal_shm_entry, entry_flags),
    offsetof(struct zcal_shm_entry, address),
    offsetof(struct zcal_shm_entry, interface),
    offsetof(struct zcal_shm_entry, threshold_bytes),
    offsetof(struct zcal_shm_entry, measured_at_ns),
    offsetof(struct zcal_shm_entry, fingerprint),
    offsetof(struct zcal_shm_entry, confidence_ppm),
    offsetof(struct zcal_shm_entry, depth_class),
    offsetof(struct zcal_shm_entry, reserved),
};
const size_t zcal_test_c_layout_count =
    sizeof zcal_test_c_layout / sizeof zcal_test_c_layout[0];

/* The report object's layout (docs/shm-abi.md, "Report objects"). */
const size_t zcal_test_c_report_layout[] = {
    sizeof(struct zcal_report_header),
    offsetof(struct zcal_report_header, abi_major),
    offsetof(struct zcal_report_header, header_size),
    offsetof(struct zcal_report_header, slot_size),
    offsetof(struct zcal_report_header, slots),
    offsetof(struct zcal_report_header, slots_used),
    offsetof(struct zcal_report_header, owner_pid),
    offsetof(struct zcal_report_header, total_size),
    offsetof(struct zcal_report_header, generation),
    offsetof(struct zcal_report_header, closed_ns),
    offsetof(struct zcal_report_header, flags),
    offsetof(struct zcal_report_header, name),
    offsetof(struct zcal_report_header, reserved),
    sizeof(struct zcal_report_cell),
    offsetof(struct zcal_report_cell, bytes),
    offsetof(struct zcal_report_cell, completions),
    offsetof(struct zcal_report_cell, sizes),
    sizeof(struct zcal_report_slot),
    offsetof(struct zcal_report_slot, flags),
    offsetof(struct zcal_report_slot, cells),
};
const size_t zcal_test_c_report_layout_count =
    sizeof zcal_test_c_report_layout / sizeof zcal_test_c_report_layout[0];
