#!/bin/bash
# Reference deployment for kmod-listsort-comparisons.
# Snags (the module was written for Linux 4.9; the machine runs 6.1):
# - kbuild dropped SUBDIRS= in 5.4: the Makefile must pass M=;
# - list_sort()'s comparison function takes const list heads since 5.13
#   (an incompatible pointer type is an error in kernel builds);
# - ACCESS_ONCE() went in 4.15, struct timeval and do_gettimeofday() in 5.0
#   and 5.6 (y2038): WRITE_ONCE() and ktime_get_ns();
# - proc_create() takes a struct proc_ops since 5.6;
# - the running kernel's headers are a package of their own.
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive

apt-get install -y --no-install-recommends gcc make patch "linux-headers-$(uname -r)"

cd /workspace/artifact
patch -p1 <<'PATCH'
--- a/Makefile
+++ b/Makefile
@@ -5,11 +5,11 @@
 PWD := $(shell pwd)
 
 all:
-	$(MAKE) -C $(KDIR) SUBDIRS=$(PWD) modules
+	$(MAKE) -C $(KDIR) M=$(PWD) modules
 
 clean:
-	$(MAKE) -C $(KDIR) SUBDIRS=$(PWD) clean
+	$(MAKE) -C $(KDIR) M=$(PWD) clean
 
 install:
-	$(MAKE) -C $(KDIR) SUBDIRS=$(PWD) modules_install
+	$(MAKE) -C $(KDIR) M=$(PWD) modules_install
 	depmod -a
--- a/lsbench.c
+++ b/lsbench.c
@@ -18,7 +18,7 @@
 #include <linux/seq_file.h>
 #include <linux/vmalloc.h>
 #include <linux/uaccess.h>
-#include <linux/time.h>
+#include <linux/ktime.h>
 
 MODULE_LICENSE("GPL");
 MODULE_AUTHOR("R. Lindqvist");
@@ -50,12 +50,13 @@
 	return x;
 }
 
-static int cmp_items(void *priv, struct list_head *a, struct list_head *b)
+static int cmp_items(void *priv, const struct list_head *a,
+		     const struct list_head *b)
 {
 	struct item *x = list_entry(a, struct item, node);
 	struct item *y = list_entry(b, struct item, node);
 
-	ACCESS_ONCE(comparisons) = comparisons + 1;
+	WRITE_ONCE(comparisons, comparisons + 1);
 	if (x->key < y->key)
 		return -1;
 	return x->key > y->key;
@@ -65,7 +66,7 @@
 {
 	struct item *items;
 	struct list_head *pos;
-	struct timeval t0, t1;
+	u64 t0, t1;
 	LIST_HEAD(head);
 	u32 state = seed;
 	u32 prev = 0;
@@ -79,9 +80,9 @@
 		list_add_tail(&items[i].node, &head);
 	}
 	comparisons = 0;
-	do_gettimeofday(&t0);
+	t0 = ktime_get_ns();
 	list_sort(NULL, &head, cmp_items);
-	do_gettimeofday(&t1);
+	t1 = ktime_get_ns();
 
 	last_sorted = 1;
 	list_for_each(pos, &head) {
@@ -93,7 +94,7 @@
 	}
 	last_n = n;
 	last_cmp = comparisons;
-	last_usec = (t1.tv_sec - t0.tv_sec) * 1000000UL + (t1.tv_usec - t0.tv_usec);
+	last_usec = (t1 - t0) / 1000;
 	vfree(items);
 	return 0;
 }
@@ -131,13 +132,12 @@
 	return err ? err : len;
 }
 
-static const struct file_operations lsbench_fops = {
-	.owner = THIS_MODULE,
-	.open = lsbench_open,
-	.read = seq_read,
-	.write = lsbench_write,
-	.llseek = seq_lseek,
-	.release = single_release,
+static const struct proc_ops lsbench_fops = {
+	.proc_open = lsbench_open,
+	.proc_read = seq_read,
+	.proc_write = lsbench_write,
+	.proc_lseek = seq_lseek,
+	.proc_release = single_release,
 };
 
 static int __init lsbench_init(void)
PATCH
make
# Loaded now for the experiment, and at every boot from the module tree.
make install
echo lsbench > /etc/modules-load.d/lsbench.conf
modprobe lsbench
bash run_experiment.sh
