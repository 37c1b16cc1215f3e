/*
 * cachesrv -- a key cache daemon for replaying access traces (the server
 * of "CLOCK is good enough", SysAdmin Workshop 2011).
 *
 * Listens on 127.0.0.1 (port from /etc/cachesrv.conf, default 11311) and
 * answers one line per request:
 *   GET <key>   HIT or MISS (a missing key is inserted)
 *   FLUSH       OK (empties the cache)
 *   STATS       <hits> <misses>
 * Clients are served one after the other, so a replay is deterministic.
 *
 * usage: cachesrv [-f] [-c config]    (-f: stay in the foreground)
 */
#include <stdio.h>
#include <stdlib.h>
#include <stdarg.h>
#include <string.h>
#include <unistd.h>
#include <signal.h>
#include <syslog.h>
#include <sys/types.h>
#include <sys/socket.h>
#include <sys/sysctl.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include "common.h"
#include "cache.h"

#define PIDFILE "/var/run/cachesrv.pid"

static int foreground;
static unsigned long hits, misses;

void logmsg(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	if (foreground) {
		vfprintf(stderr, fmt, ap);
		fputc('\n', stderr);
	} else {
		vsyslog(LOG_INFO, fmt, ap);
	}
	va_end(ap);
}

struct config {
	unsigned capacity;
	int port;
	enum policy policy;
};

static int read_config(const char *path, struct config *c)
{
	char line[256], key[64], value[128];
	FILE *f = fopen(path, "r");

	c->capacity = 1024;
	c->port = CACHESRV_PORT;
	c->policy = POLICY_LRU;
	policy_name = "lru";
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		if (line[0] == '#' || sscanf(line, " %63[a-z_] = %127s", key, value) != 2)
			continue;
		if (!strcmp(key, "capacity"))
			c->capacity = strtoul(value, NULL, 10);
		else if (!strcmp(key, "port"))
			c->port = atoi(value);
		else if (!strcmp(key, "verbose"))
			verbose = atoi(value);
		else if (!strcmp(key, "policy")) {
			policy_name = strdup(value);
			c->policy = strcmp(value, "clock") ? POLICY_LRU : POLICY_CLOCK;
		}
	}
	fclose(f);
	return 0;
}

static void serve(int fd)
{
	FILE *in = fdopen(fd, "r"), *out = fdopen(dup(fd), "w");
	char line[KEY_MAX + 16];

	while (in && out && fgets(line, sizeof(line), in)) {
		line[strcspn(line, "\r\n")] = '\0';
		if (!strncmp(line, "GET ", 4)) {
			if (cache_access(line + 4)) {
				hits++;
				fputs("HIT\n", out);
			} else {
				misses++;
				fputs("MISS\n", out);
			}
		} else if (!strcmp(line, "FLUSH")) {
			cache_flush();
			hits = misses = 0;
			fputs("OK\n", out);
		} else if (!strcmp(line, "STATS")) {
			fprintf(out, "%lu %lu\n", hits, misses);
		} else {
			fputs("ERROR\n", out);
		}
		fflush(out);
	}
	if (in)
		fclose(in);
	if (out)
		fclose(out);
}

int main(int argc, char **argv)
{
	const char *config_path = "/etc/cachesrv.conf";
	struct sockaddr_in addr;
	struct config config;
	int opt, sock, one = 1;

	while ((opt = getopt(argc, argv, "fc:")) != -1) {
		if (opt == 'f')
			foreground = 1;
		else if (opt == 'c')
			config_path = optarg;
		else {
			fprintf(stderr, "usage: cachesrv [-f] [-c config]\n");
			return 2;
		}
	}
	if (read_config(config_path, &config) < 0) {
		fprintf(stderr, "cachesrv: cannot read %s\n", config_path);
		return 1;
	}
	if (cache_init(config.policy, config.capacity) < 0) {
		fprintf(stderr, "cachesrv: out of memory\n");
		return 1;
	}
	sock = socket(AF_INET, SOCK_STREAM, 0);
	setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	memset(&addr, 0, sizeof(addr));
	addr.sin_family = AF_INET;
	addr.sin_port = htons(config.port);
	addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (bind(sock, (struct sockaddr *)&addr, sizeof(addr)) < 0 || listen(sock, 16) < 0) {
		perror("cachesrv: bind");
		return 1;
	}
	if (!foreground) {
		FILE *pid;

		if (daemon(0, 0) < 0)
			return 1;
		openlog("cachesrv", LOG_PID, LOG_DAEMON);
		pid = fopen(PIDFILE, "w");
		if (pid) {
			fprintf(pid, "%d\n", getpid());
			fclose(pid);
		}
	}
	signal(SIGPIPE, SIG_IGN);
	logmsg("cachesrv: %s, capacity %u, port %d", policy_name, config.capacity, config.port);
	for (;;) {
		int client = accept(sock, NULL, NULL);

		if (client >= 0)
			serve(client);
	}
}
