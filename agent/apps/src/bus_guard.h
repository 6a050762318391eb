// Reading a mapping another user may shrink: a load beyond the file's new
// end raises SIGBUS. The reader copies out of a report object only
// through CopyGuarded, which turns that SIGBUS into a failed copy instead
// of the agent's death.
#pragma once

namespace zcal::agent::apps {

/// Installs the process's SIGBUS handler once (later calls do nothing). A
/// SIGBUS outside CopyGuarded goes to the handler installed before, or
/// kills the process as without it.
void InstallBusGuard();

/// Runs copy(context) and returns true, or returns false when a SIGBUS
/// interrupted it (the copy is then partial). `copy` must only load from
/// the mapping and store into memory its caller owns: it is left by
/// siglongjmp, so no object with a destructor may live in its frames.
/// InstallBusGuard must have been called. Thread-safe (the jump target
/// is per thread).
bool CopyGuarded(void (*copy)(void* context), void* context);

}  // namespace zcal::agent::apps
