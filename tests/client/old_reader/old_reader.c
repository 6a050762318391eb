/* Answers lookups with libzcal's reader of ABI minor 1 (see README.md).
 *   old_zcal_reader SEGMENT QUERY...
 * QUERY is ADDRESS/INTERFACE/METHOD, ADDRESS or INTERFACE may be empty.
 * Prints one line per query: "THRESHOLD VERDICT SCOPE" or "error -ERRNO". */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zcal/zcal.h"

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: old_zcal_reader SEGMENT ADDRESS/INTERFACE/METHOD...\n");
    return 2;
  }
  zcal_handle *h = NULL;
  int rc = zcal_open(argv[1], &h);
  if (rc != 0) {
    fprintf(stderr, "old_zcal_reader: %s\n", zcal_error_detail());
    return 1;
  }
  for (int i = 2; i < argc; ++i) {
    char query[128];
    snprintf(query, sizeof query, "%s", argv[i]);
    char *address = query;
    char *interface = strchr(address, '/');
    char *method = interface ? strchr(interface + 1, '/') : NULL;
    if (!method) {
      fprintf(stderr, "old_zcal_reader: bad query \"%s\"\n", argv[i]);
      zcal_close(h);
      return 2;
    }
    *interface++ = '\0';
    *method++ = '\0';
    struct zcal_key key;
    rc = zcal_key_from_string(*address ? address : NULL,
                              *interface ? interface : NULL, &key);
    struct zcal_result r;
    if (rc == 0) rc = zcal_lookup(h, &key, (uint8_t)atoi(method), &r);
    if (rc != 0)
      printf("error %d\n", rc);
    else
      printf("%llu %s %s\n", (unsigned long long)r.threshold_bytes,
             zcal_verdict_name(r.verdict), zcal_scope_name(r.scope));
  }
  zcal_close(h);
  return 0;
}
