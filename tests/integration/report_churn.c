/* A short-lived reporting process for the agent's churn test: opens a
 * report under NAME, answers SENDS sends of 4096 bytes (no segment: the
 * fallback, zerocopy, counted under no scope), reports as many completions
 * with COPIED of them copied, then kills itself (SIGKILL: its object stays
 * behind without the CLOSED flag, for the agent to fold and remove).
 *   report_churn NAME SENDS COPIED
 * Exit status 1 when the report cannot be opened. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>

#include "zcal/zcal.h"

int main(int argc, char **argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: report_churn NAME SENDS COPIED\n");
    return 2;
  }
  int rc = zcal_report_open(argv[1]);
  if (rc != 0) {
    fprintf(stderr, "report_churn: zcal_report_open: %s\n", zcal_error_detail());
    return 1;
  }
  const unsigned long sends = strtoul(argv[2], NULL, 10);
  const unsigned long copied = strtoul(argv[3], NULL, 10);
  struct zcal_key key;
  if (zcal_key_from_string("198.18.0.1", NULL, &key) != 0) return 1;
  for (unsigned long i = 0; i < sends; ++i)
    zcal_should_zerocopy(NULL, &key, ZCAL_METHOD_MSG_ZEROCOPY, 4096, 0, 1);
  if (zcal_report_completed(NULL, &key, ZCAL_METHOD_MSG_ZEROCOPY, 0, sends, copied) != 0) return 1;
  raise(SIGKILL);
  return 1;
}
