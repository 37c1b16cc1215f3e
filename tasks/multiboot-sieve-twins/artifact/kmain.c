/*
 * kmain.c -- a bare-metal sieve: counts the primes and the prime pairs
 * (p, p + GAP) below a limit, with no OS between the loop and the
 * memory, and prints them on the first serial port.
 *
 * The limit comes from the multiboot command line ("limit=N"), default
 * 1000000, at most 4000000. The kernel ends by writing to QEMU's
 * isa-debug-exit port, so `qemu -device isa-debug-exit,iobase=0xf4` exits.
 */
#include "io.h"

#define COM1 0x3f8
#define DEBUG_EXIT 0xf4
#define MAX_LIMIT 4000000u
#define GAP 2                   /* twin primes */

struct multiboot_info {
	unsigned int flags;
	unsigned int mem_lower, mem_upper;
	unsigned int boot_device;
	unsigned int cmdline;
};

static unsigned char composite[MAX_LIMIT / 8 + 1];

static void serial_init(void)
{
	outb(COM1 + 1, 0x00);
	outb(COM1 + 3, 0x80);
	outb(COM1 + 0, 0x01);   /* 115200 baud */
	outb(COM1 + 1, 0x00);
	outb(COM1 + 3, 0x03);   /* 8N1 */
	outb(COM1 + 2, 0xc7);
}

static void putc(char c)
{
	while (!(inb(COM1 + 5) & 0x20))
		;
	outb(COM1, c);
}

static void puts(const char *s)
{
	while (*s)
		putc(*s++);
}

static void putu(unsigned int v)
{
	char buf[12];
	int i = 0;

	do {
		buf[i++] = '0' + v % 10;
		v /= 10;
	} while (v);
	while (i)
		putc(buf[--i]);
}

static int is_composite(unsigned int n)
{
	return composite[n >> 3] & (1 << (n & 7));
}

static unsigned int parse_limit(const char *cmdline)
{
	const char *p = cmdline;
	unsigned int v = 0;

	while (*p) {
		if (p[0] == 'l' && p[1] == 'i' && p[2] == 'm' && p[3] == 'i' && p[4] == 't' && p[5] == '=') {
			for (p += 6; *p >= '0' && *p <= '9'; p++)
				v = v * 10 + (*p - '0');
			return v;
		}
		p++;
	}
	return 0;
}

void kmain(unsigned int magic, struct multiboot_info *info)
{
	unsigned int limit = 1000000, n, m, primes = 0, pairs = 0;

	serial_init();
	if (magic == 0x2badb002 && (info->flags & 4)) {
		unsigned int asked = parse_limit((const char *)info->cmdline);

		if (asked >= 2 && asked <= MAX_LIMIT)
			limit = asked;
	}
	for (n = 2; n * n < limit; n++)
		if (!is_composite(n))
			for (m = n * n; m < limit; m += n)
				composite[m >> 3] |= 1 << (m & 7);
	for (n = 2; n < limit; n++) {
		if (is_composite(n))
			continue;
		primes++;
		if (n + GAP < limit && !is_composite(n + GAP))
			pairs++;
	}
	puts("limit,primes,pairs\n");
	putu(limit);
	putc(',');
	putu(primes);
	putc(',');
	putu(pairs);
	putc('\n');
	outb(DEBUG_EXIT, 0);
}
