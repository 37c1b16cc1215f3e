/* io.h -- port I/O for the serial line and QEMU's debug-exit device. */
#ifndef IO_H
#define IO_H

inline void outb(unsigned short port, unsigned char value)
{
	__asm__ volatile ("outb %0, %1" : : "a"(value), "Nd"(port));
}

inline unsigned char inb(unsigned short port)
{
	unsigned char value;

	__asm__ volatile ("inb %1, %0" : "=a"(value) : "Nd"(port));
	return value;
}

#endif
