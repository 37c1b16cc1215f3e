/*
 * params.c -- read the parameter file
 *
 * Format: one "keyword value(s)" per line, '#' starts a comment.
 *   L  a  b  kx  ky  nlist (list)  nu  T  nheat  dtlist (list)  verbose
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "specpois.h"

static int
readlist(line, ival, dval, max)
char *line;
int *ival;
double *dval;
int max;
{
    char *tok;
    int n = 0;

    tok = strtok(line, " \t\n");
    while (tok != NULL && n < max) {
        if (ival != NULL) ival[n] = atoi(tok);
        else              dval[n] = atof(tok);
        n++;
        tok = strtok(NULL, " \t\n");
    }
    return n;
}

int
readpar(fname)
char *fname;
{
    FILE *fp;
    char line[512], key[64];
    char *p;
    int  off;

    /* defaults */
    Lbox = 2.0*PI; amp_a = 1.0; amp_b = 0.5; kx0 = 1; ky0 = 1;
    nn = 0; nu = 0.1; tend = 1.0; nheat = 64; ndt = 0; verbose = 0;

    if ((fp = fopen(fname, "r")) == NULL) {
        fprintf(stderr, "specpois: cannot open %s\n", fname);
        return -1;
    }
    while (fgets(line, sizeof(line), fp) != NULL) {
        if ((p = strchr(line, '#')) != NULL) *p = '\0';
        if (sscanf(line, "%63s%n", key, &off) != 1) continue;
        p = line + off;
        if      (!strcmp(key, "L"))       Lbox  = atof(p);
        else if (!strcmp(key, "a"))       amp_a = atof(p);
        else if (!strcmp(key, "b"))       amp_b = atof(p);
        else if (!strcmp(key, "kx"))      kx0   = atoi(p);
        else if (!strcmp(key, "ky"))      ky0   = atoi(p);
        else if (!strcmp(key, "nu"))      nu    = atof(p);
        else if (!strcmp(key, "T"))       tend  = atof(p);
        else if (!strcmp(key, "nheat"))   nheat = atoi(p);
        else if (!strcmp(key, "verbose")) verbose = atoi(p);
        else if (!strcmp(key, "nlist"))   nn  = readlist(p, nlist, NULL, MAXLIST);
        else if (!strcmp(key, "dtlist"))  ndt = readlist(p, NULL, dtlist, MAXLIST);
        else {
            fprintf(stderr, "specpois: unknown keyword %s\n", key);
            fclose(fp);
            return -1;
        }
    }
    fclose(fp);
    return 0;
}
