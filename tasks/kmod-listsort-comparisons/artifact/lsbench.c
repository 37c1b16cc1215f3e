/*
 * lsbench.c -- how many comparisons does the kernel's list_sort() make?
 *
 * Companion module of "Counting comparisons in the kernel's merge sort"
 * (OSR 2017). Writing N to /proc/lsbench builds a list of N keys drawn
 * from a xorshift32 stream (module parameter `seed`), sorts it with
 * list_sort() and counts the calls of the comparison function; reading
 * /proc/lsbench gives "N,comparisons,usec,sorted" for the last run.
 *
 * Tested on 4.4 and 4.9 (Debian 9).
 */
#include <linux/module.h>
#include <linux/kernel.h>
#include <linux/init.h>
#include <linux/list.h>
#include <linux/list_sort.h>
#include <linux/proc_fs.h>
#include <linux/seq_file.h>
#include <linux/vmalloc.h>
#include <linux/uaccess.h>
#include <linux/time.h>

MODULE_LICENSE("GPL");
MODULE_AUTHOR("R. Lindqvist");
MODULE_DESCRIPTION("Comparison counts of list_sort() on pseudo-random keys");

static unsigned int seed = 20170611;
module_param(seed, uint, 0444);
MODULE_PARM_DESC(seed, "first state of the xorshift32 key stream");

#define LSBENCH_MAX_N 4000000UL

struct item {
	struct list_head node;
	u32 key;
};

static unsigned long comparisons;
static unsigned long last_n, last_cmp, last_usec;
static int last_sorted;

static u32 xorshift32(u32 *state)
{
	u32 x = *state;

	x ^= x << 13;
	x ^= x >> 17;
	x ^= x << 5;
	*state = x;
	return x;
}

static int cmp_items(void *priv, struct list_head *a, struct list_head *b)
{
	struct item *x = list_entry(a, struct item, node);
	struct item *y = list_entry(b, struct item, node);

	ACCESS_ONCE(comparisons) = comparisons + 1;
	if (x->key < y->key)
		return -1;
	return x->key > y->key;
}

static int lsbench_run(unsigned long n)
{
	struct item *items;
	struct list_head *pos;
	struct timeval t0, t1;
	LIST_HEAD(head);
	u32 state = seed;
	u32 prev = 0;
	unsigned long i;

	items = vmalloc(n * sizeof(*items));
	if (!items)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		items[i].key = xorshift32(&state);
		list_add_tail(&items[i].node, &head);
	}
	comparisons = 0;
	do_gettimeofday(&t0);
	list_sort(NULL, &head, cmp_items);
	do_gettimeofday(&t1);

	last_sorted = 1;
	list_for_each(pos, &head) {
		u32 key = list_entry(pos, struct item, node)->key;

		if (key < prev)
			last_sorted = 0;
		prev = key;
	}
	last_n = n;
	last_cmp = comparisons;
	last_usec = (t1.tv_sec - t0.tv_sec) * 1000000UL + (t1.tv_usec - t0.tv_usec);
	vfree(items);
	return 0;
}

static int lsbench_show(struct seq_file *m, void *v)
{
	seq_printf(m, "%lu,%lu,%lu,%s\n", last_n, last_cmp, last_usec,
		   last_sorted ? "sorted" : "unsorted");
	return 0;
}

static int lsbench_open(struct inode *inode, struct file *file)
{
	return single_open(file, lsbench_show, NULL);
}

static ssize_t lsbench_write(struct file *file, const char __user *buf,
			     size_t len, loff_t *off)
{
	char kbuf[24];
	unsigned long n;
	int err;

	if (len >= sizeof(kbuf))
		return -EINVAL;
	if (copy_from_user(kbuf, buf, len))
		return -EFAULT;
	kbuf[len] = '\0';
	err = kstrtoul(strim(kbuf), 10, &n);
	if (err)
		return err;
	if (n == 0 || n > LSBENCH_MAX_N)
		return -EINVAL;
	err = lsbench_run(n);
	return err ? err : len;
}

static const struct file_operations lsbench_fops = {
	.owner = THIS_MODULE,
	.open = lsbench_open,
	.read = seq_read,
	.write = lsbench_write,
	.llseek = seq_lseek,
	.release = single_release,
};

static int __init lsbench_init(void)
{
	if (!proc_create("lsbench", 0644, NULL, &lsbench_fops))
		return -ENOMEM;
	pr_info("lsbench: loaded, seed %u\n", seed);
	return 0;
}

static void __exit lsbench_exit(void)
{
	remove_proc_entry("lsbench", NULL);
}

module_init(lsbench_init);
module_exit(lsbench_exit);
