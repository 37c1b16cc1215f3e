/* boot.S -- multiboot entry: a stack, then kmain(magic, info). */
.set MB_MAGIC, 0x1BADB002
.set MB_FLAGS, 0x00000003          /* page-aligned modules, memory info */
.set MB_CHECKSUM, -(MB_MAGIC + MB_FLAGS)

.section .multiboot
.align 4
.long MB_MAGIC
.long MB_FLAGS
.long MB_CHECKSUM

.section .bss
.align 16
stack_bottom:
.skip 16384
stack_top:

.section .text
.global _start
_start:
	mov $stack_top, %esp
	push %ebx
	push %eax
	call kmain
	cli
1:	hlt
	jmp 1b
