/* Small OS seams Swift cannot reach directly (macros, variadics, GNU-only declarations). */
#ifndef PUSHSPOOL_CSYSTEM_H
#define PUSHSPOOL_CSYSTEM_H
#ifdef __linux__
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <fcntl.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <errno.h>
#ifndef RENAME_NOREPLACE
#define RENAME_NOREPLACE (1 << 0)
#endif
/* rename() that fails with EEXIST instead of replacing the destination: a claim never
   overwrites another job file. Falls back to link()+unlink() where renameat2 is missing. */
static inline int csystem_rename_noreplace(const char *from, const char *to) {
    long r = syscall(SYS_renameat2, AT_FDCWD, from, AT_FDCWD, to, RENAME_NOREPLACE);
    if (r == 0) return 0;
    if (errno != ENOSYS && errno != EINVAL) return -1;
    if (link(from, to) != 0) return -1;
    return unlink(from);
}
#include <malloc.h>
/* Free heap pages back to the system (glibc keeps them after a burst of allocations). */
static inline void csystem_trim_heap(void) { malloc_trim(0); }
#elif defined(__APPLE__)
#include <stdio.h>
static inline int csystem_rename_noreplace(const char *from, const char *to) {
    return renamex_np(from, to, RENAME_EXCL);
}
static inline void csystem_trim_heap(void) {}
#endif

#endif
