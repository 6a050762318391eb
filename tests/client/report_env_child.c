/* A process that uses libzcal as an application does, for report_test.cc:
 * zcal_open (which reads ZCAL_REPORT), one decision, then "ready" on
 * stdout; it exits when its stdin closes. */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <zcal/zcal.h>

int main(void) {
  zcal_handle *handle = NULL;
  /* No agent here unless the test names a segment: the open fails,
   * reporting is on all the same. */
  const char *segment = getenv("ZCAL_TEST_CHILD_SEGMENT");
  (void)zcal_open(segment ? segment : "/zcal-report-test-no-agent", &handle);
  struct zcal_key key;
  if (zcal_key_from_string("192.0.2.1", NULL, &key) != 0) return 2;
  (void)zcal_should_zerocopy(handle, &key, ZCAL_METHOD_MSG_ZEROCOPY, 5000, 0, 1);
  printf("ready\n");
  fflush(stdout);
  char c;
  while (read(0, &c, 1) > 0) {
  }
  zcal_close(handle);
  return 0;
}
