#include "bus_guard.h"

#include <setjmp.h>
#include <signal.h>

#include <mutex>

namespace zcal::agent::apps {
namespace {

thread_local sigjmp_buf* t_jump = nullptr;
struct sigaction g_previous {};

void OnBus(int signal, siginfo_t* info, void* context) {
  if (sigjmp_buf* jump = t_jump) siglongjmp(*jump, 1);
  // Not a copy of ours: as if this handler were not there.
  if ((g_previous.sa_flags & SA_SIGINFO) != 0 && g_previous.sa_sigaction != nullptr) {
    g_previous.sa_sigaction(signal, info, context);
  } else if (g_previous.sa_handler != SIG_DFL && g_previous.sa_handler != SIG_IGN &&
             g_previous.sa_handler != nullptr) {
    g_previous.sa_handler(signal);
  } else {
    // Returning re-runs the faulting load, which now takes the default
    // action (a core dump where one is wanted).
    struct sigaction restore {};
    restore.sa_handler = SIG_DFL;
    sigemptyset(&restore.sa_mask);
    sigaction(SIGBUS, &restore, nullptr);
  }
}

}  // namespace

void InstallBusGuard() {
  static std::once_flag once;
  std::call_once(once, [] {
    struct sigaction action {};
    action.sa_sigaction = OnBus;
    action.sa_flags = SA_SIGINFO | SA_NODEFER;
    sigemptyset(&action.sa_mask);
    sigaction(SIGBUS, &action, &g_previous);
  });
}

bool CopyGuarded(void (*copy)(void* context), void* context) {
  sigjmp_buf jump;
  // savemask 1: the jump restores the mask the signal's delivery changed.
  if (sigsetjmp(jump, 1) != 0) {
    t_jump = nullptr;
    return false;
  }
  t_jump = &jump;
  copy(context);
  t_jump = nullptr;
  return true;
}

}  // namespace zcal::agent::apps
