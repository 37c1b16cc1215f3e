/*
 * cachebench -- replays an access trace (one key a line) against cachesrv
 * and prints "trace,requests,hits,hit_ratio".
 *
 * usage: cachebench HOST PORT TRACE
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <libgen.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include "common.h"

void logmsg(const char *fmt, ...)
{
	(void)fmt;
}

int main(int argc, char **argv)
{
	struct sockaddr_in addr;
	char key[KEY_MAX + 2], answer[32];
	unsigned long requests = 0, hits = 0;
	FILE *trace, *in, *out;
	int sock;

	if (argc != 4) {
		fprintf(stderr, "usage: cachebench HOST PORT TRACE\n");
		return 2;
	}
	trace = fopen(argv[3], "r");
	if (!trace) {
		perror(argv[3]);
		return 1;
	}
	sock = socket(AF_INET, SOCK_STREAM, 0);
	memset(&addr, 0, sizeof(addr));
	addr.sin_family = AF_INET;
	addr.sin_port = htons(atoi(argv[2]));
	inet_pton(AF_INET, argv[1], &addr.sin_addr);
	if (connect(sock, (struct sockaddr *)&addr, sizeof(addr)) < 0) {
		fprintf(stderr, "cachebench: cannot reach cachesrv at %s:%s\n", argv[1], argv[2]);
		return 1;
	}
	in = fdopen(sock, "r");
	out = fdopen(dup(sock), "w");
	fputs("FLUSH\n", out);
	fflush(out);
	if (!fgets(answer, sizeof(answer), in) || strncmp(answer, "OK", 2)) {
		fprintf(stderr, "cachebench: FLUSH refused\n");
		return 1;
	}
	while (fgets(key, sizeof(key), trace)) {
		key[strcspn(key, "\r\n")] = '\0';
		if (!key[0])
			continue;
		fprintf(out, "GET %s\n", key);
		fflush(out);
		if (!fgets(answer, sizeof(answer), in))
			return 1;
		requests++;
		hits += !strncmp(answer, "HIT", 3);
	}
	printf("%s,%lu,%lu,%.4f\n", basename(argv[3]), requests, hits,
	       requests ? (double)hits / requests : 0.0);
	return 0;
}
