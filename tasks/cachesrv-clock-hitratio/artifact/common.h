/* common.h -- shared by the cachesrv daemon's files. */
#ifndef CACHESRV_COMMON_H
#define CACHESRV_COMMON_H

#define CACHESRV_PORT 11311
#define KEY_MAX 64

/* Set from the configuration file; read everywhere. */
int verbose;
char *policy_name;

void logmsg(const char *fmt, ...);

#endif
