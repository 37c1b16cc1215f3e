/* cache.h -- a fixed-capacity cache of keys under LRU or CLOCK. */
#ifndef CACHESRV_CACHE_H
#define CACHESRV_CACHE_H

enum policy { POLICY_LRU, POLICY_CLOCK };

int cache_init(enum policy policy, unsigned capacity);
/* 1 on a hit; on a miss the key is inserted (evicting one) and 0 returned. */
int cache_access(const char *key);
void cache_flush(void);

#endif
