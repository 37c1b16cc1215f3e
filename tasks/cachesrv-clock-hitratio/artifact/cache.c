/* cache.c -- LRU (a doubly linked list) and CLOCK (a ring of reference
 * bits), both over one open-addressing hash table of slots. */
#include <stdlib.h>
#include <string.h>
#include "cache.h"
#include "common.h"

struct entry {
	char key[KEY_MAX + 1];
	int used;
	int ref;                /* CLOCK: referenced since the hand passed */
	int prev, next;         /* LRU: list links, -1 at the ends */
};

static struct entry *slots;
static int *table;              /* hash -> slot index, -1 empty, -2 deleted */
static unsigned capacity, table_size, count, hand;
static int head = -1, tail = -1;
static enum policy policy;

static unsigned long hash(const char *s)
{
	unsigned long h = 5381;

	while (*s)
		h = h * 33 + (unsigned char)*s++;
	return h;
}

static int lookup(const char *key, unsigned *pos)
{
	unsigned i = hash(key) % table_size;
	int first_free = -1;

	for (;;) {
		int t = table[i];

		if (t == -1) {
			*pos = first_free >= 0 ? (unsigned)first_free : i;
			return -1;
		}
		if (t == -2) {
			if (first_free < 0)
				first_free = i;
		} else if (strcmp(slots[t].key, key) == 0) {
			*pos = i;
			return t;
		}
		i = (i + 1) % table_size;
	}
}

static void unlink_table(const char *key)
{
	unsigned pos;

	if (lookup(key, &pos) >= 0)
		table[pos] = -2;
}

static void lru_remove(int s)
{
	if (slots[s].prev >= 0)
		slots[slots[s].prev].next = slots[s].next;
	else
		head = slots[s].next;
	if (slots[s].next >= 0)
		slots[slots[s].next].prev = slots[s].prev;
	else
		tail = slots[s].prev;
}

static void lru_push_front(int s)
{
	slots[s].prev = -1;
	slots[s].next = head;
	if (head >= 0)
		slots[head].prev = s;
	head = s;
	if (tail < 0)
		tail = s;
}

/* The slot to reuse once the cache is full. */
static int victim(void)
{
	int s;

	if (policy == POLICY_LRU) {
		s = tail;
		lru_remove(s);
		return s;
	}
	for (;;) {
		s = hand;
		hand = (hand + 1) % capacity;
		if (!slots[s].ref)
			return s;
		slots[s].ref = 0;
	}
}

int cache_init(enum policy p, unsigned cap)
{
	policy = p;
	capacity = cap;
	table_size = cap * 2 + 1;
	slots = calloc(cap, sizeof(*slots));
	table = malloc(table_size * sizeof(*table));
	if (!slots || !table)
		return -1;
	cache_flush();
	return 0;
}

void cache_flush(void)
{
	unsigned i;

	for (i = 0; i < table_size; i++)
		table[i] = -1;
	memset(slots, 0, capacity * sizeof(*slots));
	count = hand = 0;
	head = tail = -1;
}

int cache_access(const char *key)
{
	unsigned pos;
	int s = lookup(key, &pos);

	if (s >= 0) {
		if (policy == POLICY_LRU) {
			lru_remove(s);
			lru_push_front(s);
		} else {
			slots[s].ref = 1;       /* second chance */
		}
		return 1;
	}
	if (count < capacity) {
		s = count++;
	} else {
		s = victim();
		unlink_table(slots[s].key);
		lookup(key, &pos);
	}
	strncpy(slots[s].key, key, KEY_MAX);
	slots[s].key[KEY_MAX] = '\0';
	slots[s].used = 1;
	slots[s].ref = 0;
	table[pos] = s;
	if (policy == POLICY_LRU)
		lru_push_front(s);
	if (verbose)
		logmsg("miss %s -> slot %d", key, s);
	return 0;
}
