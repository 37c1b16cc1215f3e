/* record.c -- the MPI datatype for record_t and the record order */
#include "psort.h"

void record_type_init(void)
{
    record_t     r[2];
    int          blocklen[4] = { 1, 1, 1, 1 };
    MPI_Aint     disp[4], base;
    MPI_Datatype types[4] = { MPI_UNSIGNED_LONG_LONG, MPI_INT, MPI_INT, MPI_UB };
    MPI_Aint     extent;
    int          i;

    MPI_Address(&r[0], &base);
    MPI_Address(&r[0].key, &disp[0]);
    MPI_Address(&r[0].rank, &disp[1]);
    MPI_Address(&r[0].idx, &disp[2]);
    MPI_Address(&r[1], &disp[3]);
    for (i = 0; i < 4; i++)
        disp[i] -= base;

    MPI_Type_struct(4, blocklen, disp, types, &MPI_RECORD);
    MPI_Type_commit(&MPI_RECORD);

    MPI_Type_extent(MPI_RECORD, &extent);
    if (extent != sizeof(record_t)) {
        fprintf(stderr, "psort: record extent %ld != sizeof(record_t) %ld\n",
                (long) extent, (long) sizeof(record_t));
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
}

int record_less(const record_t *a, const record_t *b)
{
    if (a->key != b->key)
        return a->key < b->key;
    if (a->rank != b->rank)
        return a->rank < b->rank;
    return a->idx < b->idx;
}

int record_cmp(const void *pa, const void *pb)
{
    const record_t *a = pa, *b = pb;
    if (record_less(a, b))
        return -1;
    if (record_less(b, a))
        return 1;
    return 0;
}
