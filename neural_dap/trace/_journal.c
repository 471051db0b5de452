/* The journal: everything a recorded program receives from outside the interpreter, kept in order
 * where it enters, so that a replay reads what the recording read and touches nothing.
 *
 * A plain C library, loaded into the recording child with LD_PRELOAD (never into anything else:
 * the child takes it out of the environment before the program starts). It interposes the C
 * library's entry points that CPython and C extensions (sqlite3, socket, select, ssl, mmap, ...)
 * call: file, pipe and socket I/O, opens (and "not found"), stat and directory listings, clocks,
 * random bytes, pids, sleeps, name resolution, select/poll/epoll, process creation and waiting,
 * locks and the like. Each wrapper asks `route()` what to do:
 *
 *   REAL     call through (the journal is off, or the debugger's own work: the *plumbing*)
 *   RECORD   call through and append what the program saw (result, errno, bytes out) to the journal
 *   REPLAY   perform nothing: answer from the journal (a checkpoint's replay, a scan, a live copy)
 *   SANDBOX  code the debugger runs for the user (a repr, a condition, a hover): reads of the world
 *            are real, effects are refused (EPERM)
 *
 * Matching in a replay is per stream: a call takes the first unconsumed entry of the same operation
 * and key (its file descriptor, path, clock) within a window of what comes next, so calls on
 * different descriptors may come in another order than they were recorded (a file closed by the
 * garbage collector at another moment) while each descriptor's history is exact. A call the window
 * does not hold is a divergence: it fails, the first one is kept with the event count at which it
 * happened, and the worker reports it instead of trusting what follows. A close or a write the
 * journal does not hold is answered as done (nothing is performed either way).
 *
 * A checkpoint holds none of the program's resources (`nd_journal_checkpoint`): its copies of the
 * program's descriptors are closed (a peer sees end-of-file, a port can be bound again, a lock is
 * released) and its shared mappings become private snapshots. A replay worker runs under a seccomp
 * filter (`nd_journal_install_net`) that refuses what would change the world by a path, a process
 * or an address (opening for writing, unlinking, renaming, exec, connecting, sending to an
 * address): a call the wrappers missed (glibc's internal calls, stdio, a raw syscall) becomes a
 * reported refusal, never a second effect.
 *
 * Clocks: CPython reads the monotonic clock itself while it waits for the GIL (when the recorder's
 * own thread holds it), at moments no replay repeats; a monotonic or CPU clock is journaled only
 * when read with the GIL held (the program's time.monotonic(), time.sleep's deadline), the wall
 * clock always.
 *
 * Threads: the main thread's calls, and those of the threads the program's thread table numbers as
 * they start (every thread recorded as skeletons: `nd_journal_thread`), each entry saying whose; a
 * replay answers each thread from its own entries, in its own order. Other threads (the recorder's;
 * a recording of threads in full, never replayed) are not journaled.
 *
 * Not covered (a replay reports a divergence there): asynchronous signals (a replay does not receive
 * them), memory shared with another process that keeps writing it.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <netdb.h>
#include <poll.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/times.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default")))
#define VERSION 2

/* -- modes and contexts ----------------------------------------------------------------------- */

enum { MODE_OFF, MODE_LIVE, MODE_RECORD, MODE_REPLAY, MODE_SANDBOX };
enum { CTX_PROGRAM, CTX_PLUMBING, CTX_SANDBOX };
enum { R_REAL, R_RECORD, R_REPLAY, R_SANDBOX };

static volatile int g_mode = MODE_OFF;
static pthread_t g_thread;           /* the program's main thread (its number: 0) */
static volatile int g_threads;        /* another thread of the program was numbered (nd_journal_thread) */
static __thread int t_number = -1;    /* another thread of the program: its number (nd_journal_thread) */
static __thread int t_ctx = CTX_PROGRAM;
static __thread int t_inside;         /* inside one of our own wrappers' journal work (a signal came) */
static int (*gil_held)(void);         /* PyGILState_Check, found once the interpreter is up */
static void *(*save_thread)(void);    /* PyEval_SaveThread, PyEval_RestoreThread (found with it) */
static void (*restore_thread)(void *);
static const long long *g_counter;    /* the tracer's event count (for where a replay diverged) */
static const long long *g_takes;      /* threads as skeletons: the lock takes made (nd_journal_set_takes) */
static const volatile int *g_given_up; /* ... and whether the replay gave the threads' order up */

static int route(void) {
    int mode = g_mode;
    if (mode == MODE_OFF || t_inside)
        return R_REAL;
    int ctx = t_ctx;
    if (ctx == CTX_PLUMBING)
        return R_REAL;
    if (ctx == CTX_SANDBOX || mode == MODE_SANDBOX)
        return R_SANDBOX;
    if (t_number < 0 && !pthread_equal(pthread_self(), g_thread))
        /* (a thread the program's thread table has not numbered: the recorder's own, or one of a
         * recording whose threads are not replayed, captured in full instead) */
        return mode == MODE_REPLAY ? R_SANDBOX : R_REAL;
    if (mode == MODE_RECORD)
        return R_RECORD;
    if (mode == MODE_REPLAY)
        return R_REPLAY;
    return R_REAL;
}

/* How far the program has gone: its events, and the lock takes of its threads. */
static long long events_now(void) { return g_counter ? *(volatile const long long *)g_counter : -1; }
static long long takes_now(void) { return g_takes ? *(volatile const long long *)g_takes : -1; }

/* The calling thread's number in the journal (0: the main thread). */
static uint32_t my_number(void) { return t_number < 0 ? 0 : (uint32_t)t_number; }

/* -- the real functions ------------------------------------------------------------------------ */

static void *next_symbol(const char *name) { return dlsym(RTLD_NEXT, name); }

#define REAL(ret, name, params) static ret(*real_##name) params
#define NEED(name)                                          \
    do {                                                    \
        if (real_##name == NULL)                            \
            real_##name = next_symbol(#name);               \
    } while (0)

REAL(ssize_t, read, (int, void *, size_t));
REAL(ssize_t, write, (int, const void *, size_t));
REAL(ssize_t, pread64, (int, void *, size_t, off64_t));
REAL(ssize_t, pwrite64, (int, const void *, size_t, off64_t));
REAL(ssize_t, pread, (int, void *, size_t, off_t));
REAL(ssize_t, pwrite, (int, const void *, size_t, off_t));
REAL(ssize_t, readv, (int, const struct iovec *, int));
REAL(ssize_t, writev, (int, const struct iovec *, int));
REAL(ssize_t, preadv, (int, const struct iovec *, int, off_t));
REAL(ssize_t, preadv64, (int, const struct iovec *, int, off64_t));
REAL(ssize_t, preadv2, (int, const struct iovec *, int, off_t, int));
REAL(ssize_t, preadv64v2, (int, const struct iovec *, int, off64_t, int));
REAL(ssize_t, pwritev, (int, const struct iovec *, int, off_t));
REAL(ssize_t, pwritev64, (int, const struct iovec *, int, off64_t));
REAL(ssize_t, pwritev2, (int, const struct iovec *, int, off_t, int));
REAL(ssize_t, pwritev64v2, (int, const struct iovec *, int, off64_t, int));
REAL(int, open, (const char *, int, ...));
REAL(int, open64, (const char *, int, ...));
REAL(int, openat, (int, const char *, int, ...));
REAL(int, openat64, (int, const char *, int, ...));
REAL(int, close, (int));
REAL(int, close_range, (unsigned int, unsigned int, int));
REAL(int, dup, (int));
REAL(int, dup2, (int, int));
REAL(int, dup3, (int, int, int));
REAL(int, pipe, (int[2]));
REAL(int, pipe2, (int[2], int));
REAL(off_t, lseek, (int, off_t, int));
REAL(off64_t, lseek64, (int, off64_t, int));
REAL(int, fstat, (int, struct stat *));
REAL(int, fstat64, (int, struct stat64 *));
REAL(int, stat, (const char *, struct stat *));
REAL(int, stat64, (const char *, struct stat64 *));
REAL(int, lstat, (const char *, struct stat *));
REAL(int, lstat64, (const char *, struct stat64 *));
REAL(int, fstatat, (int, const char *, struct stat *, int));
REAL(int, fstatat64, (int, const char *, struct stat64 *, int));
REAL(int, statx, (int, const char *, int, unsigned int, struct statx *));
REAL(int, statvfs, (const char *, struct statvfs *));
REAL(int, statvfs64, (const char *, struct statvfs64 *));
REAL(int, fstatvfs, (int, struct statvfs *));
REAL(int, fstatvfs64, (int, struct statvfs64 *));
REAL(int, access, (const char *, int));
REAL(int, faccessat, (int, const char *, int, int));
REAL(ssize_t, readlink, (const char *, char *, size_t));
REAL(ssize_t, readlinkat, (int, const char *, char *, size_t));
REAL(char *, realpath, (const char *, char *));
REAL(char *, getcwd, (char *, size_t));
REAL(int, chdir, (const char *));
REAL(int, fchdir, (int));
REAL(int, isatty, (int));
REAL(int, unlink, (const char *));
REAL(int, unlinkat, (int, const char *, int));
REAL(int, rename, (const char *, const char *));
REAL(int, renameat, (int, const char *, int, const char *));
REAL(int, renameat2, (int, const char *, int, const char *, unsigned int));
REAL(int, mkdir, (const char *, mode_t));
REAL(int, mkdirat, (int, const char *, mode_t));
REAL(int, rmdir, (const char *));
REAL(int, link, (const char *, const char *));
REAL(int, linkat, (int, const char *, int, const char *, int));
REAL(int, symlink, (const char *, const char *));
REAL(int, symlinkat, (const char *, int, const char *));
REAL(int, chmod, (const char *, mode_t));
REAL(int, fchmod, (int, mode_t));
REAL(int, fchmodat, (int, const char *, mode_t, int));
REAL(int, chown, (const char *, uid_t, gid_t));
REAL(int, lchown, (const char *, uid_t, gid_t));
REAL(int, fchown, (int, uid_t, gid_t));
REAL(int, fchownat, (int, const char *, uid_t, gid_t, int));
REAL(int, truncate, (const char *, off_t));
REAL(int, truncate64, (const char *, off64_t));
REAL(int, ftruncate, (int, off_t));
REAL(int, ftruncate64, (int, off64_t));
REAL(int, utimensat, (int, const char *, const struct timespec[2], int));
REAL(int, futimens, (int, const struct timespec[2]));
REAL(int, mkfifo, (const char *, mode_t));
REAL(int, mknod, (const char *, mode_t, dev_t));
REAL(int, fsync, (int));
REAL(int, fdatasync, (int));
REAL(int, flock, (int, int));
REAL(int, lockf, (int, int, off_t));
REAL(int, lockf64, (int, int, off64_t));
REAL(int, fcntl, (int, int, ...));
REAL(int, fcntl64, (int, int, ...));
REAL(int, ioctl, (int, unsigned long, ...));
REAL(int, posix_fadvise, (int, off_t, off_t, int));
REAL(int, posix_fadvise64, (int, off64_t, off64_t, int));
REAL(int, posix_fallocate, (int, off_t, off_t));
REAL(int, posix_fallocate64, (int, off64_t, off64_t));
REAL(ssize_t, sendfile, (int, int, off_t *, size_t));
REAL(ssize_t, sendfile64, (int, int, off64_t *, size_t));
REAL(ssize_t, copy_file_range, (int, off64_t *, int, off64_t *, size_t, unsigned int));
REAL(ssize_t, splice, (int, off64_t *, int, off64_t *, size_t, unsigned int));
REAL(int, socket, (int, int, int));
REAL(int, socketpair, (int, int, int, int[2]));
REAL(int, connect, (int, const struct sockaddr *, socklen_t));
REAL(int, bind, (int, const struct sockaddr *, socklen_t));
REAL(int, listen, (int, int));
REAL(int, accept, (int, struct sockaddr *, socklen_t *));
REAL(int, accept4, (int, struct sockaddr *, socklen_t *, int));
REAL(int, shutdown, (int, int));
REAL(ssize_t, recv, (int, void *, size_t, int));
REAL(ssize_t, recvfrom, (int, void *, size_t, int, struct sockaddr *, socklen_t *));
REAL(ssize_t, recvmsg, (int, struct msghdr *, int));
REAL(ssize_t, send, (int, const void *, size_t, int));
REAL(ssize_t, sendto, (int, const void *, size_t, int, const struct sockaddr *, socklen_t));
REAL(ssize_t, sendmsg, (int, const struct msghdr *, int));
REAL(int, getsockname, (int, struct sockaddr *, socklen_t *));
REAL(int, getpeername, (int, struct sockaddr *, socklen_t *));
REAL(int, getsockopt, (int, int, int, void *, socklen_t *));
REAL(int, setsockopt, (int, int, int, const void *, socklen_t));
REAL(int, select, (int, fd_set *, fd_set *, fd_set *, struct timeval *));
REAL(int, poll, (struct pollfd *, nfds_t, int));
REAL(int, epoll_create, (int));
REAL(int, epoll_create1, (int));
REAL(int, epoll_ctl, (int, int, int, struct epoll_event *));
REAL(int, epoll_wait, (int, struct epoll_event *, int, int));
REAL(int, eventfd, (unsigned int, int));
REAL(int, memfd_create, (const char *, unsigned int));
REAL(int, clock_gettime, (clockid_t, struct timespec *));
REAL(int, gettimeofday, (struct timeval *, void *));
REAL(time_t, time, (time_t *));
REAL(clock_t, times, (struct tms *));
REAL(int, getrusage, (int, struct rusage *));
REAL(int, clock_nanosleep, (clockid_t, int, const struct timespec *, struct timespec *));
REAL(int, nanosleep, (const struct timespec *, struct timespec *));
REAL(int, usleep, (useconds_t));
REAL(unsigned int, sleep, (unsigned int));
REAL(ssize_t, getrandom, (void *, size_t, unsigned int));
REAL(int, getentropy, (void *, size_t));
REAL(pid_t, getpid, (void));
REAL(pid_t, getppid, (void));
REAL(pid_t, fork, (void));
REAL(int, posix_spawn, (pid_t *, const char *, const posix_spawn_file_actions_t *, const posix_spawnattr_t *, char *const[], char *const[]));
REAL(int, posix_spawnp, (pid_t *, const char *, const posix_spawn_file_actions_t *, const posix_spawnattr_t *, char *const[], char *const[]));
REAL(int, system, (const char *));
REAL(pid_t, wait4, (pid_t, int *, int, struct rusage *));
REAL(int, waitid, (idtype_t, id_t, siginfo_t *, int));
REAL(int, kill, (pid_t, int));
REAL(int, killpg, (pid_t, int));
REAL(int, execv, (const char *, char *const[]));
REAL(int, execve, (const char *, char *const[], char *const[]));
REAL(int, fexecve, (int, char *const[], char *const[]));
REAL(DIR *, opendir, (const char *));
REAL(DIR *, fdopendir, (int));
REAL(struct dirent64 *, readdir64, (DIR *));
REAL(int, closedir, (DIR *));
REAL(void, rewinddir, (DIR *));
REAL(int, dirfd, (DIR *));
REAL(int, getaddrinfo, (const char *, const char *, const struct addrinfo *, struct addrinfo **));
REAL(void, freeaddrinfo, (struct addrinfo *));
REAL(int, getnameinfo, (const struct sockaddr *, socklen_t, char *, socklen_t, char *, socklen_t, int));
REAL(int, gethostbyname_r, (const char *, struct hostent *, char *, size_t, struct hostent **, int *));
REAL(int, gethostbyaddr_r, (const void *, socklen_t, int, struct hostent *, char *, size_t, struct hostent **, int *));
REAL(void *, mmap, (void *, size_t, int, int, int, off_t));
REAL(void *, mmap64, (void *, size_t, int, int, int, off64_t));
REAL(int, msync, (void *, size_t, int));
REAL(int, pthread_create, (pthread_t *, const pthread_attr_t *, void *(*)(void *), void *));
REAL(sem_t *, sem_open, (const char *, int, ...));
REAL(int, sem_close, (sem_t *));
REAL(int, sem_unlink, (const char *));
REAL(int, sem_wait, (sem_t *));
REAL(int, sem_trywait, (sem_t *));
REAL(int, sem_timedwait, (sem_t *, const struct timespec *));
REAL(int, sem_post, (sem_t *));
REAL(int, sem_getvalue, (sem_t *, int *));
REAL(int, shm_open, (const char *, int, mode_t));
REAL(int, shm_unlink, (const char *));

/* -- the journal file ----------------------------------------------------------------------------- */

/* One entry: a 44-byte header, then `len` payload bytes: the first `plen` of them name the call's
 * path (for messages), the rest are what the call gave the program (bytes read, a struct stat, ...).
 * `thread`: the calling thread's number (0 the main thread; the others numbered as the program
 * started them: every thread as skeletons, child/threads.py); `at` and `takes`: the events recorded
 * and the lock takes made (threads as skeletons) when the call returned (-1: not known). */
#pragma pack(push, 1)
typedef struct {
    uint16_t op;
    uint16_t plen;
    uint32_t len;
    int64_t ret;
    int32_t err;
    uint32_t key;
    uint32_t thread;
    int64_t at;
    int64_t takes;
} Entry;
#pragma pack(pop)

enum {
    OP_READ = 1, OP_PREAD, OP_READV, OP_RECV, OP_RECVFROM, OP_RECVMSG,
    OP_WRITE, OP_PWRITE, OP_WRITEV, OP_SEND, OP_SENDTO, OP_SENDMSG,
    OP_OPEN, OP_CLOSE, OP_CLOSE_RANGE, OP_DUP, OP_PIPE, OP_LSEEK,
    OP_FSTAT, OP_STAT, OP_LSTAT, OP_FSTATAT, OP_STATX, OP_STATVFS, OP_FSTATVFS, OP_ACCESS,
    OP_READLINK, OP_REALPATH, OP_GETCWD, OP_CHDIR, OP_ISATTY,
    OP_UNLINK, OP_RENAME, OP_MKDIR, OP_RMDIR, OP_LINK, OP_SYMLINK, OP_CHMOD, OP_CHOWN, OP_TRUNCATE,
    OP_UTIME, OP_MKNOD, OP_FSYNC, OP_FLOCK, OP_FCNTL, OP_IOCTL, OP_FADVISE, OP_FALLOCATE, OP_SENDFILE,
    OP_SOCKET, OP_SOCKETPAIR, OP_CONNECT, OP_BIND, OP_LISTEN, OP_ACCEPT, OP_SHUTDOWN,
    OP_GETSOCKNAME, OP_GETPEERNAME, OP_GETSOCKOPT, OP_SETSOCKOPT,
    OP_SELECT, OP_POLL, OP_EPOLL_CREATE, OP_EPOLL_CTL, OP_EPOLL_WAIT, OP_EVENTFD, OP_MEMFD,
    OP_CLOCK, OP_GETTIMEOFDAY, OP_TIME, OP_TIMES, OP_RUSAGE, OP_SLEEP,
    OP_RANDOM, OP_GETPID, OP_GETPPID, OP_FORK, OP_SPAWN, OP_SYSTEM, OP_WAIT, OP_WAITID, OP_KILL, OP_EXEC,
    OP_OPENDIR, OP_READDIR, OP_CLOSEDIR, OP_REWINDDIR, OP_DIRFD,
    OP_GETADDRINFO, OP_GETNAMEINFO, OP_MMAP, OP_MSYNC,
    OP_SEM_OPEN, OP_SEM_OP, OP_SEM_UNLINK, OP_SHM_OPEN, OP_GETHOSTBY,
    OP_COUNT
};

static const char *const OP_NAMES[OP_COUNT] = {
    [OP_READ] = "read", [OP_PREAD] = "pread", [OP_READV] = "readv", [OP_RECV] = "recv",
    [OP_RECVFROM] = "recvfrom", [OP_RECVMSG] = "recvmsg", [OP_WRITE] = "write", [OP_PWRITE] = "pwrite",
    [OP_WRITEV] = "writev", [OP_SEND] = "send", [OP_SENDTO] = "sendto", [OP_SENDMSG] = "sendmsg",
    [OP_OPEN] = "open", [OP_CLOSE] = "close", [OP_CLOSE_RANGE] = "close_range", [OP_DUP] = "dup",
    [OP_PIPE] = "pipe", [OP_LSEEK] = "lseek", [OP_FSTAT] = "fstat", [OP_STAT] = "stat", [OP_LSTAT] = "lstat",
    [OP_FSTATAT] = "fstatat", [OP_STATX] = "statx", [OP_STATVFS] = "statvfs", [OP_FSTATVFS] = "fstatvfs",
    [OP_ACCESS] = "access", [OP_READLINK] = "readlink", [OP_REALPATH] = "realpath", [OP_GETCWD] = "getcwd",
    [OP_CHDIR] = "chdir", [OP_ISATTY] = "isatty", [OP_UNLINK] = "unlink", [OP_RENAME] = "rename",
    [OP_MKDIR] = "mkdir", [OP_RMDIR] = "rmdir", [OP_LINK] = "link", [OP_SYMLINK] = "symlink",
    [OP_CHMOD] = "chmod", [OP_CHOWN] = "chown", [OP_TRUNCATE] = "truncate", [OP_UTIME] = "utimensat",
    [OP_MKNOD] = "mknod", [OP_FSYNC] = "fsync", [OP_FLOCK] = "flock", [OP_FCNTL] = "fcntl",
    [OP_IOCTL] = "ioctl", [OP_FADVISE] = "posix_fadvise", [OP_FALLOCATE] = "posix_fallocate",
    [OP_SENDFILE] = "sendfile", [OP_SOCKET] = "socket", [OP_SOCKETPAIR] = "socketpair",
    [OP_CONNECT] = "connect", [OP_BIND] = "bind", [OP_LISTEN] = "listen", [OP_ACCEPT] = "accept",
    [OP_SHUTDOWN] = "shutdown", [OP_GETSOCKNAME] = "getsockname", [OP_GETPEERNAME] = "getpeername",
    [OP_GETSOCKOPT] = "getsockopt", [OP_SETSOCKOPT] = "setsockopt", [OP_SELECT] = "select",
    [OP_POLL] = "poll", [OP_EPOLL_CREATE] = "epoll_create", [OP_EPOLL_CTL] = "epoll_ctl",
    [OP_EPOLL_WAIT] = "epoll_wait", [OP_EVENTFD] = "eventfd", [OP_MEMFD] = "memfd_create",
    [OP_CLOCK] = "clock_gettime", [OP_GETTIMEOFDAY] = "gettimeofday", [OP_TIME] = "time",
    [OP_TIMES] = "times", [OP_RUSAGE] = "getrusage", [OP_SLEEP] = "sleep", [OP_RANDOM] = "getrandom",
    [OP_GETPID] = "getpid", [OP_GETPPID] = "getppid", [OP_FORK] = "fork", [OP_SPAWN] = "posix_spawn",
    [OP_SYSTEM] = "system", [OP_WAIT] = "waitpid", [OP_WAITID] = "waitid", [OP_KILL] = "kill",
    [OP_EXEC] = "exec", [OP_OPENDIR] = "opendir", [OP_READDIR] = "readdir", [OP_CLOSEDIR] = "closedir",
    [OP_REWINDDIR] = "rewinddir", [OP_DIRFD] = "dirfd", [OP_GETADDRINFO] = "getaddrinfo",
    [OP_GETNAMEINFO] = "getnameinfo", [OP_MMAP] = "mmap", [OP_MSYNC] = "msync",
    [OP_SEM_OPEN] = "sem_open", [OP_SEM_OP] = "sem_wait/post", [OP_SEM_UNLINK] = "sem_unlink",
    [OP_SHM_OPEN] = "shm_open", [OP_GETHOSTBY] = "gethostbyname/addr",
};

static const char *op_name(int op) { return op > 0 && op < OP_COUNT && OP_NAMES[op] ? OP_NAMES[op] : "?"; }

static int j_fd = -1;                   /* the journal file */
static uint64_t j_next;                 /* offset of the next entry (recorded or to replay) */
static uint64_t j_flushed;              /* record: bytes written to the file */
static uint64_t j_entries;              /* entries recorded (or replayed) so far */
static char *j_buf;                     /* record: what is not written yet */
static size_t j_len, j_cap;
static pthread_mutex_t j_lock = PTHREAD_MUTEX_INITIALIZER;
#define FLUSH_AT (1u << 20)

/* what went wrong first, and where */
static volatile int g_diverged;
static char g_why[600];
static long long g_diverged_event = -1;
static unsigned long long g_refused;    /* effects refused in the sandbox or by the seccomp net */
static char g_refused_first[300];
static volatile int g_net_refused_nr = -1;

static uint32_t fnv(const char *text) {
    uint32_t h = 2166136261u;
    if (text == NULL)
        return 0;
    for (const unsigned char *p = (const unsigned char *)text; *p; p++)
        h = (h ^ *p) * 16777619u;
    return h;
}

static size_t path_len(const char *path) {
    size_t n = path ? strnlen(path, 4096) : 0;
    return n > 0xffff ? 0xffff : n;
}

/* ND_JOURNAL_TRACE=1 in the recording child's environment: every journaled or replayed call is
 * written to stderr (finding out why a replay diverged). */
static int g_trace;
static int g_trace_fd = 2;

static void trace_call(const char *how, int op, uint32_t key, int64_t ret) {
    char line[200];
    int n = snprintf(line, sizeof line, "[journal %d] %s %s key=%u ret=%lld entry=%llu thread=%u event=%lld takes=%lld\n",
                     (int)syscall(SYS_getpid), how, op_name(op), key, (long long)ret, (unsigned long long)j_entries,
                     my_number(), events_now(), takes_now());
    NEED(write);
    if (n > 0)
        real_write(g_trace_fd, line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1);
}

static int write_fully(const char *data, size_t n, uint64_t at) {
    NEED(pwrite64);
    while (n > 0) {
        ssize_t w = real_pwrite64(j_fd, data, n, (off64_t)at);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        data += w;
        n -= (size_t)w;
        at += (uint64_t)w;
    }
    return 0;
}

static int flush_locked(void) {
    if (j_len == 0 || j_fd < 0)
        return 0;
    int rc = write_fully(j_buf, j_len, j_flushed);
    j_flushed += j_len;
    j_len = 0;
    return rc;
}

static int reserve(size_t more) {
    if (j_len + more <= j_cap)
        return 0;
    size_t cap = j_cap ? j_cap : (1u << 16);
    while (cap < j_len + more)
        cap *= 2;
    char *grown = realloc(j_buf, cap);
    if (grown == NULL)
        return -1;
    j_buf = grown;
    j_cap = cap;
    return 0;
}

/* Append one entry; `d1`/`d2` are the output pieces. Large outputs go straight to the file. */
static void jput(int op, uint32_t key, int64_t ret, int err, const char *path, const void *d1, size_t l1,
                 const void *d2, size_t l2) {
    int saved = errno;
    t_inside = 1;
    if (g_trace)
        trace_call("record", op, key, ret);
    size_t plen = path_len(path);
    Entry e = {(uint16_t)op, (uint16_t)plen, (uint32_t)(plen + l1 + l2), ret, err, key, my_number(),
               events_now(), takes_now()};
    pthread_mutex_lock(&j_lock);
    size_t total = sizeof e + plen + l1 + l2;
    if (total > FLUSH_AT) {
        flush_locked();
        char head[sizeof e + 0x10000];
        memcpy(head, &e, sizeof e);
        memcpy(head + sizeof e, path, plen);
        write_fully(head, sizeof e + plen, j_flushed);
        j_flushed += sizeof e + plen;
        if (l1)
            write_fully(d1, l1, j_flushed);
        j_flushed += l1;
        if (l2)
            write_fully(d2, l2, j_flushed);
        j_flushed += l2;
    } else if (reserve(total) == 0) {
        memcpy(j_buf + j_len, &e, sizeof e);
        memcpy(j_buf + j_len + sizeof e, path, plen);
        if (l1)
            memcpy(j_buf + j_len + sizeof e + plen, d1, l1);
        if (l2)
            memcpy(j_buf + j_len + sizeof e + plen + l1, d2, l2);
        j_len += total;
        if (j_len >= FLUSH_AT)
            flush_locked();
    } else {
        g_diverged = 1;
        snprintf(g_why, sizeof g_why, "the journal ran out of memory");
    }
    j_next += total;
    j_entries++;
    pthread_mutex_unlock(&j_lock);
    t_inside = 0;
    errno = saved;
}

static void diverge(const char *fmt, ...) {
    if (g_diverged)
        return;
    g_diverged = 1;
    g_diverged_event = g_counter ? *g_counter : -1;
    va_list args;
    va_start(args, fmt);
    vsnprintf(g_why, sizeof g_why, fmt, args);
    va_end(args);
}

/* -- replaying: a window of entries ahead, matched per stream ------------------------------------- */

/* A call looks this many entries of its own thread ahead. The ring holds every thread's entries
 * from the oldest not yet consumed: one thread's may wait there while another's are consumed (a
 * thread that waited long in a call of the recording is answered at once), up to WINDOW_MAX. */
#define WINDOW 4096
#define WINDOW_MAX (1 << 20)
typedef struct {
    Entry e;
    uint64_t payload; /* file offset of its payload */
    int used;
} Pending;
static Pending *r_win;
static int r_cap;
static int r_head, r_count; /* ring: r_count entries from r_head; consumed ones may sit inside */
/* Threads replay at once (a call made with the GIL released): the ring and the read-ahead are
 * theirs in turn, and each takes its entry away as a copy. */
static pthread_mutex_t r_lock = PTHREAD_MUTEX_INITIALIZER;
static __thread Pending t_taken;
static char r_cache[1 << 16];  /* read-ahead over the file */
static uint64_t r_cache_at = UINT64_MAX;
/* (a replay of a live recording) the journal's bytes written by the stop it replays to: what a
 * thread of the program wrote after (it ran on in library code) may be written only in part */
static uint64_t r_limit = UINT64_MAX;
static size_t r_cache_len;

static int file_read(void *dst, size_t n, uint64_t at) {
    char *out = dst;
    if (at > r_limit || n > r_limit - at)
        return -1;
    while (n > 0) {
        if (at >= r_cache_at && at < r_cache_at + r_cache_len) {
            size_t have = (size_t)(r_cache_at + r_cache_len - at);
            size_t take = have < n ? have : n;
            memcpy(out, r_cache + (at - r_cache_at), take);
            out += take;
            at += take;
            n -= take;
            continue;
        }
        NEED(pread64);
        if (n >= sizeof r_cache) { /* a big payload: straight into place */
            ssize_t got = real_pread64(j_fd, out, n, (off64_t)at);
            if (got <= 0) {
                if (got < 0 && errno == EINTR)
                    continue;
                return -1;
            }
            out += got;
            at += (uint64_t)got;
            n -= (size_t)got;
            continue;
        }
        ssize_t got = real_pread64(j_fd, r_cache, sizeof r_cache, (off64_t)at);
        if (got <= 0) {
            if (got < 0 && errno == EINTR)
                continue;
            return -1;
        }
        r_cache_at = at;
        r_cache_len = (size_t)got;
    }
    return 0;
}

/* A ring twice as large (WINDOW at first), its entries from index 0; 0 when it cannot grow. */
static int grow(void) {
    int cap = r_cap ? 2 * r_cap : WINDOW;
    if (cap > WINDOW_MAX)
        return 0;
    Pending *ring = malloc((size_t)cap * sizeof *ring);
    if (ring == NULL)
        return 0;
    for (int k = 0; k < r_count; k++)
        ring[k] = r_win[(r_head + k) % r_cap];
    free(r_win);
    r_win = ring;
    r_cap = cap;
    r_head = 0;
    return 1;
}

/* Load one more entry into the window; 0 when there is none. */
static int load_one(void) {
    if (r_count == r_cap && !grow())
        return 0;
    Entry e;
    if (file_read(&e, sizeof e, j_next) < 0)
        return 0;
    Pending *p = &r_win[(r_head + r_count) % r_cap];
    p->e = e;
    p->payload = j_next + sizeof e;
    p->used = 0;
    j_next += sizeof e + e.len;
    r_count++;
    return 1;
}

static void drop_used_head(void) {
    while (r_count > 0 && r_win[r_head].used) {
        r_head = (r_head + 1) % r_cap;
        r_count--;
        j_entries++;
    }
}

static const char *describe_next(char *buf, size_t n) {
    if (r_count == 0 && !load_one()) {
        snprintf(buf, n, "the recording's journal ends there");
        return buf;
    }
    uint32_t me = my_number();
    for (int k = 0; k < r_count; k++) {
        Pending *p = &r_win[(r_head + k) % r_cap];
        if (p->used || p->e.thread != me)
            continue;
        char path[160] = "";
        if (p->e.plen) {
            size_t m = p->e.plen < sizeof path - 1 ? p->e.plen : sizeof path - 1;
            if (file_read(path, m, p->payload) == 0)
                path[m] = 0;
            else
                path[0] = 0;
        }
        if (path[0])
            snprintf(buf, n, "the recording had %s(%s) there", op_name(p->e.op), path);
        else
            snprintf(buf, n, "the recording had %s(%u) there", op_name(p->e.op), p->e.key);
        return buf;
    }
    snprintf(buf, n, "the recording had nothing more there");
    return buf;
}

/* Threads replayed: a call returns no sooner, in the replay's events, than the recording's did. A
 * thread that runs no traced code (a server's loop in the library: no event orders it) would
 * otherwise run ahead of the others, its waits answered at once, and read what they had not yet
 * written. Then no sooner in lock takes either, but only while takes are being made (SOON): the
 * flag that ends a server's loop is set by a thread after its event, before it takes a lock and
 * waits; but the takes made in the recording while this call was out may be takes of the very lock
 * this thread holds (a logging handler's), which the replay makes only once the call returns.
 * Only where the calling thread does not hold the GIL: the others must run meanwhile (a call made
 * holding it, the recording's thread held it too). A wait during which the program goes no further
 * for PATIENCE seconds ends (the replay went another way: the threads' schedule gives up too, and
 * says why). */
#define PATIENCE 5
#define SOON (10 * 1000 * 1000) /* nanoseconds */
static int order_given_up(void) { return g_given_up != NULL && *g_given_up; }

static void wait_for_events(int64_t at, int64_t takes) {
    if (!g_threads || g_counter == NULL || at < 0 || order_given_up() || (events_now() >= at && takes_now() >= takes))
        return;
    if (gil_held != NULL && gil_held())
        return;
    NEED(clock_gettime);
    NEED(nanosleep);
    struct timespec since, now, pause = {0, 100 * 1000};
    real_clock_gettime(CLOCK_MONOTONIC, &since);
    long long seen = events_now() + takes_now();
    while (!g_diverged && !order_given_up()) {
        long long events = events_now(), took = takes_now();
        if (events >= at && took >= takes)
            return;
        if (events + took != seen) {
            seen = events + took;
            real_clock_gettime(CLOCK_MONOTONIC, &since);
        } else {
            real_clock_gettime(CLOCK_MONOTONIC, &now);
            long long still = (now.tv_sec - since.tv_sec) * 1000000000LL + (now.tv_nsec - since.tv_nsec);
            if (still > PATIENCE * 1000000000LL || (events >= at && still > SOON))
                return;
        }
        real_nanosleep(&pause, NULL);
    }
}

/* Threads replayed, a call of a thread whose entries are all used: the recording's thread made it
 * after the journal's end (a live recording's journal is what was written by its latest stop; a
 * thread in library code ran on past it), or never returned from it (a server's poll when the
 * program exited). It does not return while the replay goes on (a replay's window ends, and its
 * process with it, before where the recording made it); the GIL is let go meanwhile, where the
 * thread held it, so the others run to that end. Returns once no event has come for PATIENCE
 * seconds (then it is a divergence). */
static void wait_past_the_journal(void) {
    NEED(clock_gettime);
    NEED(nanosleep);
    void *state = NULL;
    if (gil_held != NULL && gil_held() && save_thread != NULL && restore_thread != NULL)
        state = save_thread();
    struct timespec since, now, pause = {0, 1000 * 1000};
    real_clock_gettime(CLOCK_MONOTONIC, &since);
    long long seen = events_now();
    while (!g_diverged) {
        long long events = events_now();
        if (events != seen) {
            seen = events;
            real_clock_gettime(CLOCK_MONOTONIC, &since);
        } else {
            real_clock_gettime(CLOCK_MONOTONIC, &now);
            if (now.tv_sec - since.tv_sec > PATIENCE)
                break;
        }
        real_nanosleep(&pause, NULL);
    }
    if (state != NULL)
        restore_thread(state);
}

/* The entry at `where` (its payload's offset) in the ring, once every entry before it of another
 * thread is consumed (the r_lock held; released while it waits). Threads replayed: a call is
 * answered in the recording's order of every thread's calls. Untraced code shares state no event
 * orders (the import system's cache of a folder, filled by whichever thread looks first): a thread
 * that got there first in the replay, where another had in the recording, made a call the
 * recording never had. Only where the calling thread does not hold the GIL (see wait_for_events);
 * a wait during which no entry is consumed for PATIENCE seconds ends, and the order is not waited
 * for again in this replay (an entry the replay never asks for would hold every later call). */
static volatile int g_order_given_up;
static Pending *after_the_others(uint64_t where, uint32_t me) {
    NEED(clock_gettime);
    NEED(nanosleep);
    struct timespec since = {0, 0}, now, pause = {0, 100 * 1000};
    uint64_t seen = j_entries;
    for (;;) {
        Pending *mine = NULL;
        int waiting = 0;
        for (int k = 0; k < r_count && mine == NULL; k++) {
            Pending *p = &r_win[(r_head + k) % r_cap];
            if (p->payload == where)
                mine = p;
            else if (!p->used && p->e.thread != me)
                waiting = 1;
        }
        if (mine == NULL || !waiting || g_diverged || g_order_given_up || order_given_up())
            return mine;
        if (since.tv_sec == 0 || j_entries != seen) {
            seen = j_entries;
            real_clock_gettime(CLOCK_MONOTONIC, &since);
        } else {
            real_clock_gettime(CLOCK_MONOTONIC, &now);
            if (now.tv_sec - since.tv_sec > PATIENCE) {
                g_order_given_up = 1;
                return mine;
            }
        }
        pthread_mutex_unlock(&r_lock);
        real_nanosleep(&pause, NULL);
        pthread_mutex_lock(&r_lock);
    }
}

/* The entry for this call: the first unused one of the same op, key and thread in the window (a
 * copy, the calling thread's). NULL (and a divergence, unless `tolerant`) where there is none. */
static Pending *take(int op, uint32_t key, const char *path, int tolerant) {
    if (g_diverged)
        return NULL;
    t_inside = 1;
    pthread_mutex_lock(&r_lock);
    Pending *found = NULL;
    uint32_t me = my_number();
    int at_end = 0; /* (every entry looked at: the journal has no more of this thread's) */
    int unused = 0; /* ... and none of its own left unanswered (a call of another kind) */
    for (int k = 0, mine = 0; mine < WINDOW; k++) {
        if (k == r_count && !load_one()) {
            at_end = 1;
            break;
        }
        if (k >= r_count)
            break;
        Pending *p = &r_win[(r_head + k) % r_cap];
        if (p->e.thread != me)
            continue;
        mine++;
        unused += !p->used;
        if (!p->used && p->e.op == op && p->e.key == key) {
            found = p;
            break;
        }
    }
    if (found != NULL && g_threads && !(gil_held != NULL && gil_held()))
        found = after_the_others(found->payload, me);
    if (g_trace)
        trace_call(found ? "replay" : "MISSING", op, key, found ? found->e.ret : -1);
    if (found != NULL) {
        found->used = 1;
        t_taken = *found;
        found = &t_taken;
        drop_used_head();
        pthread_mutex_unlock(&r_lock);
        wait_for_events(found->e.at, found->e.takes);
        pthread_mutex_lock(&r_lock);
    } else if (!tolerant && at_end && !unused && g_threads && r_limit != UINT64_MAX) {
        /* A live recording's journal (what its latest stop had written): a call it has no answer
         * for, and no other call of that thread left, was made after that (see
         * wait_past_the_journal) */
        pthread_mutex_unlock(&r_lock);
        wait_past_the_journal();
        pthread_mutex_lock(&r_lock);
        diverge("the replay's thread %u called %s, which the recording's had not returned from where its journal ends",
                me, op_name(op));
    } else if (!tolerant && at_end && !unused && me != 0 && g_threads && !(gil_held != NULL && gil_held())) {
        /* Another thread's call the journal has no answer for, nor any later call of that thread:
         * the recording ended while the thread was in it (a server's poll when the program
         * exited). It does not return while the replay goes on; it is a divergence only once no
         * event has come for PATIENCE seconds (then nothing waits for the program's end). */
        pthread_mutex_unlock(&r_lock);
        wait_for_events(INT64_MAX, 0);
        pthread_mutex_lock(&r_lock);
        diverge("the replay's thread %u called %s, which the recording's never returned from before it ended", me,
                op_name(op));
    } else if (!tolerant) {
        char next[240], who[40] = "";
        describe_next(next, sizeof next);
        if (me != 0)
            snprintf(who, sizeof who, " (its thread %u)", me);
        if (path)
            diverge("the replay called %s(%.160s)%s, which the recording did not at this point: %s", op_name(op), path, who, next);
        else
            diverge("the replay called %s(%u)%s, which the recording did not at this point: %s", op_name(op), key, who, next);
    }
    pthread_mutex_unlock(&r_lock);
    t_inside = 0;
    return found;
}

/* Copy the output part of an entry's payload into `dst` (at most `cap` bytes); -1 if it is larger. */
static long payload(Pending *p, void *dst, size_t cap) {
    size_t n = p->e.len - p->e.plen;
    if (n > cap) {
        diverge("the replay asked %s for %zu bytes where the recording got %zu", op_name(p->e.op), cap, n);
        return -1;
    }
    int inside = t_inside;
    t_inside = 1;
    pthread_mutex_lock(&r_lock);
    int unread = n && file_read(dst, n, p->payload + p->e.plen) < 0;
    pthread_mutex_unlock(&r_lock);
    t_inside = inside;
    if (unread) {
        diverge("the journal could not be read");
        return -1;
    }
    return (long)n;
}

static long answer(Pending *p) {
    errno = p->e.err;
    return (long)p->e.ret;
}

static long failed(void) {
    errno = EIO;
    return -1;
}

/* -- the sandbox ---------------------------------------------------------------------------------- */

#define OWNED_FDS 65536
static unsigned char g_owned[OWNED_FDS / 8]; /* descriptors the sandbox opened itself */

static int owned(int fd) { return fd >= 0 && fd < OWNED_FDS && (g_owned[fd / 8] >> (fd % 8)) & 1; }
static void own(int fd, int yes) {
    if (fd < 0 || fd >= OWNED_FDS)
        return;
    if (yes)
        g_owned[fd / 8] |= (unsigned char)(1u << (fd % 8));
    else
        g_owned[fd / 8] &= (unsigned char)~(1u << (fd % 8));
}

static long refuse(int op, const char *path, int fd) {
    g_refused++;
    if (!g_refused_first[0]) {
        if (path)
            snprintf(g_refused_first, sizeof g_refused_first, "%s(%.200s)", op_name(op), path);
        else
            snprintf(g_refused_first, sizeof g_refused_first, "%s(%d)", op_name(op), fd);
    }
    if (g_mode == MODE_REPLAY && t_ctx == CTX_PROGRAM && !g_diverged) {
        if (path)
            diverge("the replay's other thread called %s(%.200s), which a replay never performs", op_name(op), path);
        else
            diverge("the replay's other thread called %s(%d), which a replay never performs", op_name(op), fd);
    }
    errno = EPERM;
    return -1;
}

/* A sandboxed run may change files under its scratch folder (its TMPDIR): a test's temporary files,
 * a program's scratch output. A path counts as inside only when it cannot climb out (no ".."). */
static char g_scratch[1024];
static size_t g_scratch_len;

static int in_scratch(const char *path) {
    if (g_scratch_len == 0 || path == NULL || strstr(path, "..") != NULL)
        return 0;
    char whole[PATH_MAX];
    if (path[0] != '/') {
        NEED(getcwd);
        if (real_getcwd(whole, sizeof whole) == NULL)
            return 0;
        size_t n = strlen(whole);
        if (snprintf(whole + n, sizeof whole - n, "/%s", path) >= (int)(sizeof whole - n))
            return 0;
        path = whole;
    }
    return strncmp(path, g_scratch, g_scratch_len) == 0 && (path[g_scratch_len] == '/' || path[g_scratch_len] == 0);
}

/* A descriptor the sandbox may read or write: one it opened, or the standard streams (a replay's
 * are /dev/null; a sandboxed run's are the recorder's). */
static int sandbox_fd_ok(int fd) { return fd <= 2 || owned(fd); }

/* An effect the sandbox allows: on a path in its scratch folder, or on a descriptor it opened. */
static int sandbox_may(const char *path, int fd) { return path != NULL ? in_scratch(path) : owned(fd); }

static int read_only(int flags) { return (flags & O_ACCMODE) == O_RDONLY && !(flags & (O_CREAT | O_TRUNC | O_APPEND)); }

/* -- the wrappers -------------------------------------------------------------------------------- */

/* A call with no output but its result: performed when recording, answered when replaying. */
#define EFFECT(op, key, path, fd, call)                       \
    do {                                                      \
        switch (route()) {                                    \
        case R_REAL:                                          \
            return call;                                      \
        case R_SANDBOX:                                       \
            if (sandbox_may(path, fd))                        \
                return call;                                  \
            return refuse(op, path, fd);                      \
        case R_REPLAY: {                                      \
            Pending *p_ = take(op, key, path, 0);             \
            return p_ ? answer(p_) : failed();                \
        }                                                     \
        default: {                                            \
            long r_ = (long)(call);                           \
            jput(op, key, r_, errno, path, NULL, 0, NULL, 0); \
            return r_;                                        \
        }                                                     \
        }                                                     \
    } while (0)

/* A call whose only output is its result, harmless to perform in the sandbox. */
#define QUERY(op, key, path, call)                            \
    do {                                                      \
        switch (route()) {                                    \
        case R_REAL:                                          \
        case R_SANDBOX:                                       \
            return call;                                      \
        case R_REPLAY: {                                      \
            Pending *p_ = take(op, key, path, 0);             \
            return p_ ? answer(p_) : failed();                \
        }                                                     \
        default: {                                            \
            long r_ = (long)(call);                           \
            jput(op, key, r_, errno, path, NULL, 0, NULL, 0); \
            return r_;                                        \
        }                                                     \
        }                                                     \
    } while (0)

/* A call that fills `out` (`n` bytes of it when it succeeds); `sandbox_ok`: it may run in the sandbox. */
#define FILLS(op, key, path, call, out, cap, n_expr, sandbox_ok, fd)     \
    do {                                                                 \
        switch (route()) {                                               \
        case R_REAL:                                                     \
            return call;                                                 \
        case R_SANDBOX:                                                  \
            if (sandbox_ok)                                              \
                return call;                                             \
            return refuse(op, path, fd);                                 \
        case R_REPLAY: {                                                 \
            Pending *p_ = take(op, key, path, 0);                        \
            if (p_ == NULL || payload(p_, (out), (cap)) < 0)             \
                return failed();                                         \
            return answer(p_);                                           \
        }                                                                \
        default: {                                                       \
            long r_ = (long)(call);                                      \
            int e_ = errno;                                              \
            long n_ = r_ < 0 ? 0 : (long)(n_expr);                       \
            jput(op, key, r_, e_, path, (out), (size_t)n_, NULL, 0);     \
            errno = e_;                                                  \
            return r_;                                                   \
        }                                                                \
        }                                                                \
    } while (0)

/* ---- reading ---- */

EXPORT ssize_t read(int fd, void *buf, size_t n) {
    NEED(read);
    FILLS(OP_READ, (uint32_t)fd, NULL, real_read(fd, buf, n), buf, n, r_, sandbox_fd_ok(fd), fd);
}
EXPORT ssize_t pread64(int fd, void *buf, size_t n, off64_t off) {
    NEED(pread64);
    FILLS(OP_PREAD, (uint32_t)fd, NULL, real_pread64(fd, buf, n, off), buf, n, r_, sandbox_fd_ok(fd), fd);
}
EXPORT ssize_t pread(int fd, void *buf, size_t n, off_t off) {
    NEED(pread);
    FILLS(OP_PREAD, (uint32_t)fd, NULL, real_pread(fd, buf, n, off), buf, n, r_, sandbox_fd_ok(fd), fd);
}
EXPORT ssize_t recv(int fd, void *buf, size_t n, int flags) {
    NEED(recv);
    FILLS(OP_RECV, (uint32_t)fd, NULL, real_recv(fd, buf, n, flags), buf, n, r_, sandbox_fd_ok(fd), fd);
}

static size_t iov_total(const struct iovec *iov, int cnt) {
    size_t total = 0;
    for (int k = 0; k < cnt; k++)
        total += iov[k].iov_len;
    return total;
}

/* readv and friends: the bytes read, gathered; scattered back when replayed. */
static void record_iov(int op, int fd, long r, int err, const struct iovec *iov, int cnt) {
    size_t left = r > 0 ? (size_t)r : 0;
    char *flat = left ? malloc(left) : NULL;
    size_t at = 0;
    for (int k = 0; k < cnt && at < left && flat; k++) {
        size_t take = iov[k].iov_len < left - at ? iov[k].iov_len : left - at;
        memcpy(flat + at, iov[k].iov_base, take);
        at += take;
    }
    jput(op, (uint32_t)fd, r, err, NULL, flat, flat ? left : 0, NULL, 0);
    free(flat);
}

static long replay_iov(int op, int fd, const struct iovec *iov, int cnt) {
    Pending *p = take(op, (uint32_t)fd, NULL, 0);
    if (p == NULL)
        return failed();
    size_t n = p->e.len - p->e.plen, cap = iov_total(iov, cnt);
    if (n > cap) {
        diverge("the replay's %s asked for fewer bytes than the recording got", op_name(op));
        return failed();
    }
    char *flat = n ? malloc(n) : NULL;
    if (n && (flat == NULL || payload(p, flat, n) < 0)) {
        free(flat);
        return failed();
    }
    size_t at = 0;
    for (int k = 0; k < cnt && at < n; k++) {
        size_t take_ = iov[k].iov_len < n - at ? iov[k].iov_len : n - at;
        memcpy(iov[k].iov_base, flat + at, take_);
        at += take_;
    }
    free(flat);
    return answer(p);
}

#define READ_IOV(op, fd, call)                                  \
    do {                                                        \
        switch (route()) {                                      \
        case R_REAL:                                            \
            return call;                                        \
        case R_SANDBOX:                                         \
            if (sandbox_fd_ok(fd))                              \
                return call;                                    \
            return refuse(op, NULL, fd);                        \
        case R_REPLAY:                                          \
            return replay_iov(op, fd, iov, cnt);                \
        default: {                                              \
            long r_ = (long)(call);                             \
            int e_ = errno;                                     \
            record_iov(op, fd, r_, e_, iov, cnt);               \
            errno = e_;                                         \
            return r_;                                          \
        }                                                       \
        }                                                       \
    } while (0)

EXPORT ssize_t readv(int fd, const struct iovec *iov, int cnt) {
    NEED(readv);
    READ_IOV(OP_READV, fd, real_readv(fd, iov, cnt));
}
EXPORT ssize_t preadv(int fd, const struct iovec *iov, int cnt, off_t off) {
    NEED(preadv);
    READ_IOV(OP_READV, fd, real_preadv(fd, iov, cnt, off));
}
EXPORT ssize_t preadv64(int fd, const struct iovec *iov, int cnt, off64_t off) {
    NEED(preadv64);
    READ_IOV(OP_READV, fd, real_preadv64(fd, iov, cnt, off));
}
EXPORT ssize_t preadv2(int fd, const struct iovec *iov, int cnt, off_t off, int flags) {
    NEED(preadv2);
    READ_IOV(OP_READV, fd, real_preadv2(fd, iov, cnt, off, flags));
}
EXPORT ssize_t preadv64v2(int fd, const struct iovec *iov, int cnt, off64_t off, int flags) {
    NEED(preadv64v2);
    READ_IOV(OP_READV, fd, real_preadv64v2(fd, iov, cnt, off, flags));
}

EXPORT ssize_t recvfrom(int fd, void *buf, size_t n, int flags, struct sockaddr *addr, socklen_t *alen) {
    NEED(recvfrom);
    switch (route()) {
    case R_REAL:
        return real_recvfrom(fd, buf, n, flags, addr, alen);
    case R_SANDBOX:
        if (sandbox_fd_ok(fd))
            return real_recvfrom(fd, buf, n, flags, addr, alen);
        return refuse(OP_RECVFROM, NULL, fd);
    case R_REPLAY: {
        Pending *p = take(OP_RECVFROM, (uint32_t)fd, NULL, 0);
        if (p == NULL)
            return failed();
        size_t total = p->e.len - p->e.plen;
        char *all = total ? malloc(total) : NULL;
        if (total && (all == NULL || payload(p, all, total) < 0)) {
            free(all);
            return failed();
        }
        socklen_t got_len = 0;
        if (total >= sizeof got_len)
            memcpy(&got_len, all, sizeof got_len);
        size_t data = total >= sizeof got_len + got_len ? total - sizeof got_len - got_len : 0;
        if (data > n) {
            free(all);
            diverge("the replay's recvfrom asked for fewer bytes than the recording got");
            return failed();
        }
        if (data)
            memcpy(buf, all + sizeof got_len + got_len, data);
        if (addr && alen) {
            socklen_t copy = got_len < *alen ? got_len : *alen;
            memcpy(addr, all + sizeof got_len, copy);
            *alen = got_len;
        }
        free(all);
        return answer(p);
    }
    default: {
        struct sockaddr_storage mine;
        socklen_t mine_len = sizeof mine;
        ssize_t r = real_recvfrom(fd, buf, n, flags, (struct sockaddr *)&mine, &mine_len);
        int e = errno;
        if (r < 0)
            mine_len = 0;
        if (mine_len > sizeof mine)
            mine_len = sizeof mine;
        if (addr && alen && r >= 0) {
            socklen_t copy = mine_len < *alen ? mine_len : *alen;
            memcpy(addr, &mine, copy);
            *alen = mine_len;
        }
        char head[sizeof(socklen_t) + sizeof mine];
        memcpy(head, &mine_len, sizeof mine_len);
        memcpy(head + sizeof mine_len, &mine, mine_len);
        jput(OP_RECVFROM, (uint32_t)fd, r, e, NULL, head, sizeof mine_len + mine_len, buf, r > 0 ? (size_t)r : 0);
        errno = e;
        return r;
    }
    }
}

/* recvmsg: the data, the sender's address, the ancillary data (descriptors passed: their numbers),
 * and the flags; in that order. */
EXPORT ssize_t recvmsg(int fd, struct msghdr *msg, int flags) {
    NEED(recvmsg);
    switch (route()) {
    case R_REAL:
        return real_recvmsg(fd, msg, flags);
    case R_SANDBOX:
        if (sandbox_fd_ok(fd))
            return real_recvmsg(fd, msg, flags);
        return refuse(OP_RECVMSG, NULL, fd);
    case R_REPLAY: {
        Pending *p = take(OP_RECVMSG, (uint32_t)fd, NULL, 0);
        if (p == NULL)
            return failed();
        size_t total = p->e.len - p->e.plen;
        char *all = total ? malloc(total) : NULL;
        if (total < 3 * sizeof(uint32_t) || all == NULL || payload(p, all, total) < 0) {
            free(all);
            diverge("the journal's recvmsg entry is short");
            return failed();
        }
        uint32_t name_len, control_len, out_flags;
        memcpy(&name_len, all, 4);
        memcpy(&control_len, all + 4, 4);
        memcpy(&out_flags, all + 8, 4);
        size_t at = 12;
        if (at + name_len + control_len > total || control_len > msg->msg_controllen ||
            total - at - name_len - control_len > iov_total(msg->msg_iov, (int)msg->msg_iovlen)) {
            free(all);
            diverge("the replay's recvmsg does not fit what the recording received");
            return failed();
        }
        if (msg->msg_name) {
            socklen_t copy = name_len < msg->msg_namelen ? name_len : msg->msg_namelen;
            memcpy(msg->msg_name, all + at, copy);
            msg->msg_namelen = name_len;
        }
        at += name_len;
        if (control_len)
            memcpy(msg->msg_control, all + at, control_len);
        msg->msg_controllen = control_len;
        at += control_len;
        size_t data = total - at, done = 0;
        for (size_t k = 0; k < msg->msg_iovlen && done < data; k++) {
            size_t take_ = msg->msg_iov[k].iov_len < data - done ? msg->msg_iov[k].iov_len : data - done;
            memcpy(msg->msg_iov[k].iov_base, all + at + done, take_);
            done += take_;
        }
        msg->msg_flags = (int)out_flags;
        free(all);
        return answer(p);
    }
    default: {
        ssize_t r = real_recvmsg(fd, msg, flags);
        int e = errno;
        uint32_t name_len = r >= 0 && msg->msg_name ? msg->msg_namelen : 0;
        uint32_t control_len = r >= 0 ? (uint32_t)msg->msg_controllen : 0;
        uint32_t out_flags = r >= 0 ? (uint32_t)msg->msg_flags : 0;
        size_t data = r > 0 ? (size_t)r : 0;
        size_t total = 12 + name_len + control_len + data;
        char *all = malloc(total);
        if (all != NULL) {
            memcpy(all, &name_len, 4);
            memcpy(all + 4, &control_len, 4);
            memcpy(all + 8, &out_flags, 4);
            size_t at = 12;
            if (name_len)
                memcpy(all + at, msg->msg_name, name_len);
            at += name_len;
            if (control_len)
                memcpy(all + at, msg->msg_control, control_len);
            at += control_len;
            size_t done = 0;
            for (size_t k = 0; k < msg->msg_iovlen && done < data; k++) {
                size_t take_ = msg->msg_iov[k].iov_len < data - done ? msg->msg_iov[k].iov_len : data - done;
                memcpy(all + at + done, msg->msg_iov[k].iov_base, take_);
                done += take_;
            }
            jput(OP_RECVMSG, (uint32_t)fd, r, e, NULL, all, total, NULL, 0);
            free(all);
        }
        errno = e;
        return r;
    }
    }
}

/* ---- writing: performed when recording, never when replaying; a write the journal does not hold
 * (a buffer flushed by the garbage collector at another moment) is answered as done ---- */

#define WRITES(op, fd, n, call)                                       \
    do {                                                              \
        switch (route()) {                                            \
        case R_REAL:                                                  \
            return call;                                              \
        case R_SANDBOX:                                               \
            if (sandbox_fd_ok(fd))                                    \
                return call;                                          \
            return refuse(op, NULL, fd);                              \
        case R_REPLAY: {                                              \
            Pending *p_ = take(op, (uint32_t)(fd), NULL, 1);          \
            if (p_ == NULL) {                                         \
                if (g_diverged)                                       \
                    return failed();                                  \
                return (ssize_t)(n);                                  \
            }                                                         \
            return answer(p_);                                        \
        }                                                             \
        default: {                                                    \
            long r_ = (long)(call);                                   \
            jput(op, (uint32_t)(fd), r_, errno, NULL, NULL, 0, NULL, 0); \
            return r_;                                                \
        }                                                             \
        }                                                             \
    } while (0)

EXPORT ssize_t write(int fd, const void *buf, size_t n) {
    NEED(write);
    WRITES(OP_WRITE, fd, n, real_write(fd, buf, n));
}
EXPORT ssize_t pwrite64(int fd, const void *buf, size_t n, off64_t off) {
    NEED(pwrite64);
    WRITES(OP_PWRITE, fd, n, real_pwrite64(fd, buf, n, off));
}
EXPORT ssize_t pwrite(int fd, const void *buf, size_t n, off_t off) {
    NEED(pwrite);
    WRITES(OP_PWRITE, fd, n, real_pwrite(fd, buf, n, off));
}
EXPORT ssize_t writev(int fd, const struct iovec *iov, int cnt) {
    NEED(writev);
    WRITES(OP_WRITEV, fd, iov_total(iov, cnt), real_writev(fd, iov, cnt));
}
EXPORT ssize_t pwritev(int fd, const struct iovec *iov, int cnt, off_t off) {
    NEED(pwritev);
    WRITES(OP_WRITEV, fd, iov_total(iov, cnt), real_pwritev(fd, iov, cnt, off));
}
EXPORT ssize_t pwritev64(int fd, const struct iovec *iov, int cnt, off64_t off) {
    NEED(pwritev64);
    WRITES(OP_WRITEV, fd, iov_total(iov, cnt), real_pwritev64(fd, iov, cnt, off));
}
EXPORT ssize_t pwritev2(int fd, const struct iovec *iov, int cnt, off_t off, int flags) {
    NEED(pwritev2);
    WRITES(OP_WRITEV, fd, iov_total(iov, cnt), real_pwritev2(fd, iov, cnt, off, flags));
}
EXPORT ssize_t pwritev64v2(int fd, const struct iovec *iov, int cnt, off64_t off, int flags) {
    NEED(pwritev64v2);
    WRITES(OP_WRITEV, fd, iov_total(iov, cnt), real_pwritev64v2(fd, iov, cnt, off, flags));
}
EXPORT ssize_t send(int fd, const void *buf, size_t n, int flags) {
    NEED(send);
    WRITES(OP_SEND, fd, n, real_send(fd, buf, n, flags));
}
EXPORT ssize_t sendto(int fd, const void *buf, size_t n, int flags, const struct sockaddr *addr, socklen_t alen) {
    NEED(sendto);
    WRITES(OP_SENDTO, fd, n, real_sendto(fd, buf, n, flags, addr, alen));
}
EXPORT ssize_t sendmsg(int fd, const struct msghdr *msg, int flags) {
    NEED(sendmsg);
    WRITES(OP_SENDMSG, fd, iov_total(msg->msg_iov, (int)msg->msg_iovlen), real_sendmsg(fd, msg, flags));
}

/* ---- opening and closing ---- */

static int open_mode_needed(int flags) { return (flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE; }

#define OPENS(path, flags, call)                                          \
    do {                                                                  \
        switch (route()) {                                                \
        case R_REAL:                                                      \
            return call;                                                  \
        case R_SANDBOX: {                                                 \
            if (!read_only(flags) && !in_scratch(path))                   \
                return refuse(OP_OPEN, path, -1);                         \
            int fd_ = call;                                               \
            own(fd_, 1);                                                  \
            return fd_;                                                   \
        }                                                                 \
        case R_REPLAY: {                                                  \
            Pending *p_ = take(OP_OPEN, fnv(path), path, 0);              \
            return p_ ? (int)answer(p_) : (int)failed();                  \
        }                                                                 \
        default: {                                                        \
            int fd_ = call;                                               \
            jput(OP_OPEN, fnv(path), fd_, errno, path, NULL, 0, NULL, 0); \
            return fd_;                                                   \
        }                                                                 \
        }                                                                 \
    } while (0)

EXPORT int open(const char *path, int flags, ...) {
    NEED(open);
    mode_t mode = 0;
    if (open_mode_needed(flags)) {
        va_list args;
        va_start(args, flags);
        mode = va_arg(args, mode_t);
        va_end(args);
    }
    OPENS(path, flags, real_open(path, flags, mode));
}
EXPORT int open64(const char *path, int flags, ...) {
    NEED(open64);
    mode_t mode = 0;
    if (open_mode_needed(flags)) {
        va_list args;
        va_start(args, flags);
        mode = va_arg(args, mode_t);
        va_end(args);
    }
    OPENS(path, flags, real_open64(path, flags, mode));
}
EXPORT int openat(int dirfd_, const char *path, int flags, ...) {
    NEED(openat);
    mode_t mode = 0;
    if (open_mode_needed(flags)) {
        va_list args;
        va_start(args, flags);
        mode = va_arg(args, mode_t);
        va_end(args);
    }
    OPENS(path, flags, real_openat(dirfd_, path, flags, mode));
}
EXPORT int openat64(int dirfd_, const char *path, int flags, ...) {
    NEED(openat64);
    mode_t mode = 0;
    if (open_mode_needed(flags)) {
        va_list args;
        va_start(args, flags);
        mode = va_arg(args, mode_t);
        va_end(args);
    }
    OPENS(path, flags, real_openat64(dirfd_, path, flags, mode));
}

/* A close the journal does not hold (the garbage collector closed a file at another moment) is
 * answered as done: nothing is closed in a replay either way. */
EXPORT int close(int fd) {
    NEED(close);
    switch (route()) {
    case R_REAL:
        return real_close(fd);
    case R_SANDBOX:
        if (owned(fd)) {
            own(fd, 0);
            return real_close(fd);
        }
        return (int)refuse(OP_CLOSE, NULL, fd);
    case R_REPLAY: {
        Pending *p = take(OP_CLOSE, (uint32_t)fd, NULL, 1);
        if (p == NULL)
            return g_diverged ? (int)failed() : 0;
        return (int)answer(p);
    }
    default: {
        int r = real_close(fd);
        jput(OP_CLOSE, (uint32_t)fd, r, errno, NULL, NULL, 0, NULL, 0);
        return r;
    }
    }
}

EXPORT int close_range(unsigned int first, unsigned int last, int flags) {
    NEED(close_range);
    EFFECT(OP_CLOSE_RANGE, first, NULL, (int)first, real_close_range(first, last, flags));
}

EXPORT int dup(int fd) {
    NEED(dup);
    switch (route()) {
    case R_REAL:
        return real_dup(fd);
    case R_SANDBOX: {
        if (!owned(fd))
            return (int)refuse(OP_DUP, NULL, fd);
        int r = real_dup(fd);
        own(r, 1);
        return r;
    }
    case R_REPLAY: {
        Pending *p = take(OP_DUP, (uint32_t)fd, NULL, 0);
        return p ? (int)answer(p) : (int)failed();
    }
    default: {
        int r = real_dup(fd);
        jput(OP_DUP, (uint32_t)fd, r, errno, NULL, NULL, 0, NULL, 0);
        return r;
    }
    }
}
EXPORT int dup2(int fd, int to) {
    NEED(dup2);
    EFFECT(OP_DUP, (uint32_t)fd, NULL, fd, real_dup2(fd, to));
}
EXPORT int dup3(int fd, int to, int flags) {
    NEED(dup3);
    EFFECT(OP_DUP, (uint32_t)fd, NULL, fd, real_dup3(fd, to, flags));
}

/* Calls that make a pair of descriptors: both numbers are the output. */
#define PAIR(op, key, call, fds)                                                  \
    do {                                                                          \
        switch (route()) {                                                        \
        case R_REAL:                                                              \
            return call;                                                          \
        case R_SANDBOX: {                                                         \
            int r_ = call;                                                        \
            if (r_ == 0) {                                                        \
                own(fds[0], 1);                                                   \
                own(fds[1], 1);                                                   \
            }                                                                     \
            return r_;                                                            \
        }                                                                         \
        case R_REPLAY: {                                                          \
            Pending *p_ = take(op, key, NULL, 0);                                 \
            if (p_ == NULL || payload(p_, fds, 2 * sizeof(int)) < 0)              \
                return (int)failed();                                             \
            return (int)answer(p_);                                               \
        }                                                                         \
        default: {                                                                \
            int r_ = call;                                                        \
            jput(op, key, r_, errno, NULL, fds, r_ == 0 ? 2 * sizeof(int) : 0, NULL, 0); \
            return r_;                                                            \
        }                                                                         \
        }                                                                         \
    } while (0)

EXPORT int pipe(int fds[2]) {
    NEED(pipe);
    PAIR(OP_PIPE, 0, real_pipe(fds), fds);
}
EXPORT int pipe2(int fds[2], int flags) {
    NEED(pipe2);
    PAIR(OP_PIPE, 0, real_pipe2(fds, flags), fds);
}
EXPORT int socketpair(int domain, int type, int protocol, int fds[2]) {
    NEED(socketpair);
    PAIR(OP_SOCKETPAIR, (uint32_t)domain, real_socketpair(domain, type, protocol, fds), fds);
}

/* Calls that make one descriptor and touch nothing else: harmless in the sandbox. */
#define MAKES_FD(op, key, call)                                   \
    do {                                                          \
        switch (route()) {                                        \
        case R_REAL:                                              \
            return call;                                          \
        case R_SANDBOX: {                                         \
            int r_ = call;                                        \
            own(r_, 1);                                           \
            return r_;                                            \
        }                                                         \
        case R_REPLAY: {                                          \
            Pending *p_ = take(op, key, NULL, 0);                 \
            return p_ ? (int)answer(p_) : (int)failed();          \
        }                                                         \
        default: {                                                \
            int r_ = call;                                        \
            jput(op, key, r_, errno, NULL, NULL, 0, NULL, 0);     \
            return r_;                                            \
        }                                                         \
        }                                                         \
    } while (0)

EXPORT int socket(int domain, int type, int protocol) {
    NEED(socket);
    MAKES_FD(OP_SOCKET, (uint32_t)domain, real_socket(domain, type, protocol));
}
EXPORT int epoll_create(int size) {
    NEED(epoll_create);
    MAKES_FD(OP_EPOLL_CREATE, 0, real_epoll_create(size));
}
EXPORT int epoll_create1(int flags) {
    NEED(epoll_create1);
    MAKES_FD(OP_EPOLL_CREATE, 0, real_epoll_create1(flags));
}
EXPORT int eventfd(unsigned int initval, int flags) {
    NEED(eventfd);
    MAKES_FD(OP_EVENTFD, 0, real_eventfd(initval, flags));
}
EXPORT int memfd_create(const char *name, unsigned int flags) {
    NEED(memfd_create);
    MAKES_FD(OP_MEMFD, fnv(name), real_memfd_create(name, flags));
}

EXPORT off_t lseek(int fd, off_t off, int whence) {
    NEED(lseek);
    switch (route()) {
    case R_REAL:
        return real_lseek(fd, off, whence);
    case R_SANDBOX:
        if (sandbox_fd_ok(fd))
            return real_lseek(fd, off, whence);
        return (off_t)refuse(OP_LSEEK, NULL, fd);
    case R_REPLAY: {
        Pending *p = take(OP_LSEEK, (uint32_t)fd, NULL, 0);
        return p ? (off_t)answer(p) : (off_t)failed();
    }
    default: {
        off_t r = real_lseek(fd, off, whence);
        jput(OP_LSEEK, (uint32_t)fd, r, errno, NULL, NULL, 0, NULL, 0);
        return r;
    }
    }
}
EXPORT off64_t lseek64(int fd, off64_t off, int whence) {
    NEED(lseek64);
    switch (route()) {
    case R_REAL:
        return real_lseek64(fd, off, whence);
    case R_SANDBOX:
        if (sandbox_fd_ok(fd))
            return real_lseek64(fd, off, whence);
        return (off64_t)refuse(OP_LSEEK, NULL, fd);
    case R_REPLAY: {
        Pending *p = take(OP_LSEEK, (uint32_t)fd, NULL, 0);
        return p ? (off64_t)answer(p) : (off64_t)failed();
    }
    default: {
        off64_t r = real_lseek64(fd, off, whence);
        jput(OP_LSEEK, (uint32_t)fd, r, errno, NULL, NULL, 0, NULL, 0);
        return r;
    }
    }
}

/* ---- what the file system says ---- */

EXPORT int fstat(int fd, struct stat *st) {
    NEED(fstat);
    FILLS(OP_FSTAT, (uint32_t)fd, NULL, real_fstat(fd, st), st, sizeof *st, r_ == 0 ? sizeof *st : 0, sandbox_fd_ok(fd), fd);
}
EXPORT int fstat64(int fd, struct stat64 *st) {
    NEED(fstat64);
    FILLS(OP_FSTAT, (uint32_t)fd, NULL, real_fstat64(fd, st), st, sizeof *st, r_ == 0 ? sizeof *st : 0, sandbox_fd_ok(fd), fd);
}
EXPORT int stat(const char *path, struct stat *st) {
    NEED(stat);
    FILLS(OP_STAT, fnv(path), path, real_stat(path, st), st, sizeof *st, r_ == 0 ? sizeof *st : 0, 1, -1);
}
EXPORT int stat64(const char *path, struct stat64 *st) {
    NEED(stat64);
    FILLS(OP_STAT, fnv(path), path, real_stat64(path, st), st, sizeof *st, r_ == 0 ? sizeof *st : 0, 1, -1);
}
EXPORT int lstat(const char *path, struct stat *st) {
    NEED(lstat);
    FILLS(OP_LSTAT, fnv(path), path, real_lstat(path, st), st, sizeof *st, r_ == 0 ? sizeof *st : 0, 1, -1);
}
EXPORT int lstat64(const char *path, struct stat64 *st) {
    NEED(lstat64);
    FILLS(OP_LSTAT, fnv(path), path, real_lstat64(path, st), st, sizeof *st, r_ == 0 ? sizeof *st : 0, 1, -1);
}
EXPORT int fstatat(int dirfd_, const char *path, struct stat *st, int flags) {
    NEED(fstatat);
    FILLS(OP_FSTATAT, fnv(path) ^ (uint32_t)dirfd_, path, real_fstatat(dirfd_, path, st, flags), st, sizeof *st,
          r_ == 0 ? sizeof *st : 0, 1, -1);
}
EXPORT int fstatat64(int dirfd_, const char *path, struct stat64 *st, int flags) {
    NEED(fstatat64);
    FILLS(OP_FSTATAT, fnv(path) ^ (uint32_t)dirfd_, path, real_fstatat64(dirfd_, path, st, flags), st, sizeof *st,
          r_ == 0 ? sizeof *st : 0, 1, -1);
}
EXPORT int statx(int dirfd_, const char *path, int flags, unsigned int mask, struct statx *st) {
    NEED(statx);
    FILLS(OP_STATX, fnv(path) ^ (uint32_t)dirfd_, path, real_statx(dirfd_, path, flags, mask, st), st, sizeof *st,
          r_ == 0 ? sizeof *st : 0, 1, -1);
}
EXPORT int statvfs(const char *path, struct statvfs *st) {
    NEED(statvfs);
    FILLS(OP_STATVFS, fnv(path), path, real_statvfs(path, st), st, sizeof *st, r_ == 0 ? sizeof *st : 0, 1, -1);
}
EXPORT int statvfs64(const char *path, struct statvfs64 *st) {
    NEED(statvfs64);
    FILLS(OP_STATVFS, fnv(path), path, real_statvfs64(path, st), st, sizeof *st, r_ == 0 ? sizeof *st : 0, 1, -1);
}
EXPORT int fstatvfs(int fd, struct statvfs *st) {
    NEED(fstatvfs);
    FILLS(OP_FSTATVFS, (uint32_t)fd, NULL, real_fstatvfs(fd, st), st, sizeof *st, r_ == 0 ? sizeof *st : 0, sandbox_fd_ok(fd), fd);
}
EXPORT int fstatvfs64(int fd, struct statvfs64 *st) {
    NEED(fstatvfs64);
    FILLS(OP_FSTATVFS, (uint32_t)fd, NULL, real_fstatvfs64(fd, st), st, sizeof *st, r_ == 0 ? sizeof *st : 0, sandbox_fd_ok(fd), fd);
}
EXPORT int access(const char *path, int how) {
    NEED(access);
    QUERY(OP_ACCESS, fnv(path), path, real_access(path, how));
}
EXPORT int faccessat(int dirfd_, const char *path, int how, int flags) {
    NEED(faccessat);
    QUERY(OP_ACCESS, fnv(path), path, real_faccessat(dirfd_, path, how, flags));
}
EXPORT ssize_t readlink(const char *path, char *buf, size_t n) {
    NEED(readlink);
    FILLS(OP_READLINK, fnv(path), path, real_readlink(path, buf, n), buf, n, r_, 1, -1);
}
EXPORT ssize_t readlinkat(int dirfd_, const char *path, char *buf, size_t n) {
    NEED(readlinkat);
    FILLS(OP_READLINK, fnv(path), path, real_readlinkat(dirfd_, path, buf, n), buf, n, r_, 1, -1);
}
EXPORT int isatty(int fd) {
    NEED(isatty);
    QUERY(OP_ISATTY, (uint32_t)fd, NULL, real_isatty(fd));
}

EXPORT char *realpath(const char *path, char *resolved) {
    NEED(realpath);
    switch (route()) {
    case R_REAL:
    case R_SANDBOX:
        return real_realpath(path, resolved);
    case R_REPLAY: {
        Pending *p = take(OP_REALPATH, fnv(path), path, 0);
        if (p == NULL) {
            errno = EIO;
            return NULL;
        }
        char got[PATH_MAX + 1];
        long n = payload(p, got, PATH_MAX);
        if (n < 0) {
            errno = EIO;
            return NULL;
        }
        got[n] = 0;
        if (p->e.ret == 0) {
            errno = p->e.err;
            return NULL;
        }
        char *out = resolved ? resolved : malloc((size_t)n + 1);
        if (out)
            memcpy(out, got, (size_t)n + 1);
        return out;
    }
    default: {
        char *r = real_realpath(path, resolved);
        int e = errno;
        jput(OP_REALPATH, fnv(path), r != NULL, e, path, r, r ? strlen(r) : 0, NULL, 0);
        errno = e;
        return r;
    }
    }
}

EXPORT char *getcwd(char *buf, size_t n) {
    NEED(getcwd);
    switch (route()) {
    case R_REAL:
    case R_SANDBOX:
        return real_getcwd(buf, n);
    case R_REPLAY: {
        Pending *p = take(OP_GETCWD, 0, NULL, 0);
        if (p == NULL) {
            errno = EIO;
            return NULL;
        }
        char got[PATH_MAX + 1];
        long len = payload(p, got, PATH_MAX);
        if (len < 0) {
            errno = EIO;
            return NULL;
        }
        got[len] = 0;
        if (p->e.ret == 0) {
            errno = p->e.err;
            return NULL;
        }
        if (buf == NULL) {
            size_t size = n > (size_t)len ? n : (size_t)len + 1;
            buf = malloc(size);
            if (buf == NULL)
                return NULL;
        } else if (n < (size_t)len + 1) {
            errno = ERANGE;
            return NULL;
        }
        memcpy(buf, got, (size_t)len + 1);
        return buf;
    }
    default: {
        char *r = real_getcwd(buf, n);
        int e = errno;
        jput(OP_GETCWD, 0, r != NULL, e, NULL, r, r ? strlen(r) : 0, NULL, 0);
        errno = e;
        return r;
    }
    }
}

/* chdir changes this process only: a replay changes it too (what the wrappers miss, such as the
 * dynamic loader, then looks where the recording looked) and answers as the recording was answered. */
EXPORT int chdir(const char *path) {
    NEED(chdir);
    switch (route()) {
    case R_REPLAY: {
        Pending *p = take(OP_CHDIR, fnv(path), path, 0);
        if (p == NULL)
            return (int)failed();
        if (p->e.ret == 0)
            real_chdir(path);
        return (int)answer(p);
    }
    case R_RECORD: {
        int r = real_chdir(path);
        jput(OP_CHDIR, fnv(path), r, errno, path, NULL, 0, NULL, 0);
        return r;
    }
    default:
        return real_chdir(path);
    }
}
EXPORT int fchdir(int fd) {
    NEED(fchdir);
    switch (route()) {
    case R_REPLAY: {
        Pending *p = take(OP_CHDIR, (uint32_t)fd, NULL, 0);
        return p ? (int)answer(p) : (int)failed();
    }
    case R_RECORD: {
        int r = real_fchdir(fd);
        jput(OP_CHDIR, (uint32_t)fd, r, errno, NULL, NULL, 0, NULL, 0);
        return r;
    }
    case R_SANDBOX:
        return sandbox_fd_ok(fd) ? real_fchdir(fd) : (int)refuse(OP_CHDIR, NULL, fd);
    default:
        return real_fchdir(fd);
    }
}

/* ---- changing the file system ---- */

EXPORT int unlink(const char *path) {
    NEED(unlink);
    EFFECT(OP_UNLINK, fnv(path), path, -1, real_unlink(path));
}
EXPORT int unlinkat(int dirfd_, const char *path, int flags) {
    NEED(unlinkat);
    EFFECT(OP_UNLINK, fnv(path), path, -1, real_unlinkat(dirfd_, path, flags));
}
/* A rename moves two paths: in the sandbox both must lie in the scratch folder. */
#define RENAMES(from, to, call)                                                      \
    do {                                                                             \
        if (route() == R_SANDBOX && !(in_scratch(from) && in_scratch(to)))           \
            return (int)refuse(OP_RENAME, in_scratch(from) ? (to) : (from), -1);     \
        EFFECT(OP_RENAME, fnv(from) ^ fnv(to), from, -1, call);                      \
    } while (0)
EXPORT int rename(const char *from, const char *to) {
    NEED(rename);
    RENAMES(from, to, real_rename(from, to));
}
EXPORT int renameat(int fd1, const char *from, int fd2, const char *to) {
    NEED(renameat);
    RENAMES(from, to, real_renameat(fd1, from, fd2, to));
}
EXPORT int renameat2(int fd1, const char *from, int fd2, const char *to, unsigned int flags) {
    NEED(renameat2);
    RENAMES(from, to, real_renameat2(fd1, from, fd2, to, flags));
}
EXPORT int mkdir(const char *path, mode_t mode) {
    NEED(mkdir);
    EFFECT(OP_MKDIR, fnv(path), path, -1, real_mkdir(path, mode));
}
EXPORT int mkdirat(int dirfd_, const char *path, mode_t mode) {
    NEED(mkdirat);
    EFFECT(OP_MKDIR, fnv(path), path, -1, real_mkdirat(dirfd_, path, mode));
}
EXPORT int rmdir(const char *path) {
    NEED(rmdir);
    EFFECT(OP_RMDIR, fnv(path), path, -1, real_rmdir(path));
}
EXPORT int link(const char *from, const char *to) {
    NEED(link);
    EFFECT(OP_LINK, fnv(from) ^ fnv(to), to, -1, real_link(from, to));
}
EXPORT int linkat(int fd1, const char *from, int fd2, const char *to, int flags) {
    NEED(linkat);
    EFFECT(OP_LINK, fnv(from) ^ fnv(to), to, -1, real_linkat(fd1, from, fd2, to, flags));
}
EXPORT int symlink(const char *from, const char *to) {
    NEED(symlink);
    EFFECT(OP_SYMLINK, fnv(from) ^ fnv(to), to, -1, real_symlink(from, to));
}
EXPORT int symlinkat(const char *from, int fd, const char *to) {
    NEED(symlinkat);
    EFFECT(OP_SYMLINK, fnv(from) ^ fnv(to), to, -1, real_symlinkat(from, fd, to));
}
EXPORT int chmod(const char *path, mode_t mode) {
    NEED(chmod);
    EFFECT(OP_CHMOD, fnv(path), path, -1, real_chmod(path, mode));
}
EXPORT int fchmod(int fd, mode_t mode) {
    NEED(fchmod);
    EFFECT(OP_CHMOD, (uint32_t)fd, NULL, fd, real_fchmod(fd, mode));
}
EXPORT int fchmodat(int dirfd_, const char *path, mode_t mode, int flags) {
    NEED(fchmodat);
    EFFECT(OP_CHMOD, fnv(path), path, -1, real_fchmodat(dirfd_, path, mode, flags));
}
EXPORT int chown(const char *path, uid_t uid, gid_t gid) {
    NEED(chown);
    EFFECT(OP_CHOWN, fnv(path), path, -1, real_chown(path, uid, gid));
}
EXPORT int lchown(const char *path, uid_t uid, gid_t gid) {
    NEED(lchown);
    EFFECT(OP_CHOWN, fnv(path), path, -1, real_lchown(path, uid, gid));
}
EXPORT int fchown(int fd, uid_t uid, gid_t gid) {
    NEED(fchown);
    EFFECT(OP_CHOWN, (uint32_t)fd, NULL, fd, real_fchown(fd, uid, gid));
}
EXPORT int fchownat(int dirfd_, const char *path, uid_t uid, gid_t gid, int flags) {
    NEED(fchownat);
    EFFECT(OP_CHOWN, fnv(path), path, -1, real_fchownat(dirfd_, path, uid, gid, flags));
}
EXPORT int truncate(const char *path, off_t len) {
    NEED(truncate);
    EFFECT(OP_TRUNCATE, fnv(path), path, -1, real_truncate(path, len));
}
EXPORT int truncate64(const char *path, off64_t len) {
    NEED(truncate64);
    EFFECT(OP_TRUNCATE, fnv(path), path, -1, real_truncate64(path, len));
}
EXPORT int ftruncate(int fd, off_t len) {
    NEED(ftruncate);
    EFFECT(OP_TRUNCATE, (uint32_t)fd, NULL, fd, real_ftruncate(fd, len));
}
EXPORT int ftruncate64(int fd, off64_t len) {
    NEED(ftruncate64);
    EFFECT(OP_TRUNCATE, (uint32_t)fd, NULL, fd, real_ftruncate64(fd, len));
}
EXPORT int utimensat(int dirfd_, const char *path, const struct timespec times_[2], int flags) {
    NEED(utimensat);
    EFFECT(OP_UTIME, fnv(path), path, -1, real_utimensat(dirfd_, path, times_, flags));
}
EXPORT int futimens(int fd, const struct timespec times_[2]) {
    NEED(futimens);
    EFFECT(OP_UTIME, (uint32_t)fd, NULL, fd, real_futimens(fd, times_));
}
EXPORT int mkfifo(const char *path, mode_t mode) {
    NEED(mkfifo);
    EFFECT(OP_MKNOD, fnv(path), path, -1, real_mkfifo(path, mode));
}
EXPORT int mknod(const char *path, mode_t mode, dev_t dev) {
    NEED(mknod);
    EFFECT(OP_MKNOD, fnv(path), path, -1, real_mknod(path, mode, dev));
}
EXPORT int fsync(int fd) {
    NEED(fsync);
    WRITES(OP_FSYNC, fd, 0, real_fsync(fd));
}
EXPORT int fdatasync(int fd) {
    NEED(fdatasync);
    WRITES(OP_FSYNC, fd, 0, real_fdatasync(fd));
}
EXPORT int flock(int fd, int how) {
    NEED(flock);
    EFFECT(OP_FLOCK, (uint32_t)fd, NULL, fd, real_flock(fd, how));
}
EXPORT int lockf(int fd, int how, off_t len) {
    NEED(lockf);
    EFFECT(OP_FLOCK, (uint32_t)fd, NULL, fd, real_lockf(fd, how, len));
}
EXPORT int lockf64(int fd, int how, off64_t len) {
    NEED(lockf64);
    EFFECT(OP_FLOCK, (uint32_t)fd, NULL, fd, real_lockf64(fd, how, len));
}
EXPORT int posix_fadvise(int fd, off_t off, off_t len, int advice) {
    NEED(posix_fadvise);
    QUERY(OP_FADVISE, (uint32_t)fd, NULL, real_posix_fadvise(fd, off, len, advice));
}
EXPORT int posix_fadvise64(int fd, off64_t off, off64_t len, int advice) {
    NEED(posix_fadvise64);
    QUERY(OP_FADVISE, (uint32_t)fd, NULL, real_posix_fadvise64(fd, off, len, advice));
}
EXPORT int posix_fallocate(int fd, off_t off, off_t len) {
    NEED(posix_fallocate);
    EFFECT(OP_FALLOCATE, (uint32_t)fd, NULL, fd, real_posix_fallocate(fd, off, len));
}
EXPORT int posix_fallocate64(int fd, off64_t off, off64_t len) {
    NEED(posix_fallocate64);
    EFFECT(OP_FALLOCATE, (uint32_t)fd, NULL, fd, real_posix_fallocate64(fd, off, len));
}

/* sendfile and friends write (and read); the offsets they move are part of the answer. */
#define MOVES(op, fd, offp, call)                                                      \
    do {                                                                               \
        switch (route()) {                                                             \
        case R_REAL:                                                                   \
            return call;                                                               \
        case R_SANDBOX:                                                                \
            return refuse(op, NULL, fd);                                               \
        case R_REPLAY: {                                                               \
            Pending *p_ = take(op, (uint32_t)(fd), NULL, 0);                           \
            if (p_ == NULL)                                                            \
                return failed();                                                       \
            if ((offp) != NULL && payload(p_, (offp), sizeof *(offp)) < 0)             \
                return failed();                                                       \
            return answer(p_);                                                         \
        }                                                                              \
        default: {                                                                     \
            long r_ = (long)(call);                                                    \
            jput(op, (uint32_t)(fd), r_, errno, NULL, (offp), (offp) ? sizeof *(offp) : 0, NULL, 0); \
            return r_;                                                                 \
        }                                                                              \
        }                                                                              \
    } while (0)

EXPORT ssize_t sendfile(int out, int in, off_t *off, size_t n) {
    NEED(sendfile);
    MOVES(OP_SENDFILE, out, off, real_sendfile(out, in, off, n));
}
EXPORT ssize_t sendfile64(int out, int in, off64_t *off, size_t n) {
    NEED(sendfile64);
    MOVES(OP_SENDFILE, out, off, real_sendfile64(out, in, off, n));
}
EXPORT ssize_t copy_file_range(int in, off64_t *in_off, int out, off64_t *out_off, size_t n, unsigned int flags) {
    NEED(copy_file_range);
    MOVES(OP_SENDFILE, out, out_off, real_copy_file_range(in, in_off, out, out_off, n, flags));
}
EXPORT ssize_t splice(int in, off64_t *in_off, int out, off64_t *out_off, size_t n, unsigned int flags) {
    NEED(splice);
    MOVES(OP_SENDFILE, out, out_off, real_splice(in, in_off, out, out_off, n, flags));
}

/* fcntl: locks, flags, duplicates. A lock query (F_GETLK) fills its struct flock. */
static int fcntl_arg_is_flock(int cmd) {
    return cmd == F_GETLK || cmd == F_SETLK || cmd == F_SETLKW || cmd == F_OFD_GETLK || cmd == F_OFD_SETLK ||
           cmd == F_OFD_SETLKW;
}

static int fcntl_sandbox_ok(int fd, int cmd) {
    if (cmd == F_GETFD || cmd == F_GETFL || cmd == F_GETLK || cmd == F_OFD_GETLK || cmd == F_GETPIPE_SZ)
        return 1;
    return owned(fd);
}

static int do_fcntl(int (*real)(int, int, ...), int fd, int cmd, void *arg) {
    switch (route()) {
    case R_REAL:
        return real(fd, cmd, arg);
    case R_SANDBOX:
        if (fcntl_sandbox_ok(fd, cmd) || fd <= 2) {
            int r = real(fd, cmd, arg);
            if ((cmd == F_DUPFD || cmd == F_DUPFD_CLOEXEC) && r >= 0)
                own(r, 1);
            return r;
        }
        return (int)refuse(OP_FCNTL, NULL, fd);
    case R_REPLAY: {
        Pending *p = take(OP_FCNTL, (uint32_t)fd ^ ((uint32_t)cmd << 20), NULL, 0);
        if (p == NULL)
            return (int)failed();
        if (fcntl_arg_is_flock(cmd) && arg != NULL && p->e.len > p->e.plen && payload(p, arg, sizeof(struct flock)) < 0)
            return (int)failed();
        return (int)answer(p);
    }
    default: {
        int r = real(fd, cmd, arg);
        int e = errno;
        int fills = fcntl_arg_is_flock(cmd) && arg != NULL && (cmd == F_GETLK || cmd == F_OFD_GETLK);
        jput(OP_FCNTL, (uint32_t)fd ^ ((uint32_t)cmd << 20), r, e, NULL, fills ? arg : NULL, fills ? sizeof(struct flock) : 0,
             NULL, 0);
        errno = e;
        return r;
    }
    }
}

EXPORT int fcntl(int fd, int cmd, ...) {
    NEED(fcntl);
    va_list args;
    va_start(args, cmd);
    void *arg = va_arg(args, void *);
    va_end(args);
    return do_fcntl(real_fcntl, fd, cmd, arg);
}
EXPORT int fcntl64(int fd, int cmd, ...) {
    NEED(fcntl64);
    va_list args;
    va_start(args, cmd);
    void *arg = va_arg(args, void *);
    va_end(args);
    return do_fcntl(real_fcntl64 ? real_fcntl64 : real_fcntl, fd, cmd, arg);
}

/* ioctl: how many bytes a request fills. */
static size_t ioctl_fills(unsigned long request) {
    switch (request) {
    case TCGETS:
        return sizeof(struct termios);
    case TIOCGWINSZ:
        return sizeof(struct winsize);
    case FIONREAD:
    case TIOCGPGRP:
    case TIOCOUTQ:
        return sizeof(int);
    default:
        break;
    }
    if (_IOC_DIR(request) & _IOC_READ)
        return _IOC_SIZE(request);
    return 0;
}

EXPORT int ioctl(int fd, unsigned long request, ...) {
    NEED(ioctl);
    va_list args;
    va_start(args, request);
    void *arg = va_arg(args, void *);
    va_end(args);
    size_t fills = ioctl_fills(request);
    switch (route()) {
    case R_REAL:
        return real_ioctl(fd, request, arg);
    case R_SANDBOX:
        /* its own descriptors (FIOCLEX on a file it opened); the standard streams only asked */
        if (owned(fd) || (fills && fd <= 2))
            return real_ioctl(fd, request, arg);
        return (int)refuse(OP_IOCTL, NULL, fd);
    case R_REPLAY: {
        Pending *p = take(OP_IOCTL, (uint32_t)fd ^ (uint32_t)request, NULL, 0);
        if (p == NULL || (fills && arg && p->e.len > p->e.plen && payload(p, arg, fills) < 0))
            return (int)failed();
        return (int)answer(p);
    }
    default: {
        int r = real_ioctl(fd, request, arg);
        int e = errno;
        jput(OP_IOCTL, (uint32_t)fd ^ (uint32_t)request, r, e, NULL, arg, r >= 0 && arg ? fills : 0, NULL, 0);
        errno = e;
        return r;
    }
    }
}

/* ---- sockets ---- */

EXPORT int connect(int fd, const struct sockaddr *addr, socklen_t len) {
    NEED(connect);
    EFFECT(OP_CONNECT, (uint32_t)fd, NULL, fd, real_connect(fd, addr, len));
}
EXPORT int bind(int fd, const struct sockaddr *addr, socklen_t len) {
    NEED(bind);
    EFFECT(OP_BIND, (uint32_t)fd, NULL, fd, real_bind(fd, addr, len));
}
EXPORT int listen(int fd, int backlog) {
    NEED(listen);
    EFFECT(OP_LISTEN, (uint32_t)fd, NULL, fd, real_listen(fd, backlog));
}
EXPORT int shutdown(int fd, int how) {
    NEED(shutdown);
    EFFECT(OP_SHUTDOWN, (uint32_t)fd, NULL, fd, real_shutdown(fd, how));
}
EXPORT int setsockopt(int fd, int level, int name, const void *value, socklen_t len) {
    NEED(setsockopt);
    switch (route()) {
    case R_SANDBOX:
        return owned(fd) ? real_setsockopt(fd, level, name, value, len) : (int)refuse(OP_SETSOCKOPT, NULL, fd);
    default:
        EFFECT(OP_SETSOCKOPT, (uint32_t)fd, NULL, fd, real_setsockopt(fd, level, name, value, len));
    }
}

/* Calls that fill an address (and its length). */
static int fills_address(int op, int fd, int (*call)(int, struct sockaddr *, socklen_t *), int (*call4)(int, struct sockaddr *, socklen_t *, int),
                         int flags, struct sockaddr *addr, socklen_t *alen, int sandbox_ok) {
#define CALL_IT() (call4 ? call4(fd, addr, alen, flags) : call(fd, addr, alen))
    switch (route()) {
    case R_REAL:
        return CALL_IT();
    case R_SANDBOX:
        if (sandbox_ok && owned(fd))
            return CALL_IT();
        return (int)refuse(op, NULL, fd);
    case R_REPLAY: {
        Pending *p = take(op, (uint32_t)fd, NULL, 0);
        if (p == NULL)
            return (int)failed();
        size_t n = p->e.len - p->e.plen;
        char got[sizeof(socklen_t) + sizeof(struct sockaddr_storage)];
        if (n > sizeof got || payload(p, got, sizeof got) < 0)
            return (int)failed();
        socklen_t real_len = 0;
        if (n >= sizeof real_len)
            memcpy(&real_len, got, sizeof real_len);
        if (addr && alen) {
            socklen_t copy = real_len < *alen ? real_len : *alen;
            memcpy(addr, got + sizeof real_len, copy);
            *alen = real_len;
        }
        return (int)answer(p);
    }
    default: {
        struct sockaddr_storage mine;
        socklen_t mine_len = sizeof mine;
        int r = call4 ? call4(fd, (struct sockaddr *)&mine, &mine_len, flags) : call(fd, (struct sockaddr *)&mine, &mine_len);
        int e = errno;
        if (r < 0)
            mine_len = 0;
        if (mine_len > sizeof mine)
            mine_len = sizeof mine;
        if (addr && alen && r >= 0) {
            socklen_t copy = mine_len < *alen ? mine_len : *alen;
            memcpy(addr, &mine, copy);
            *alen = mine_len;
        }
        char head[sizeof(socklen_t) + sizeof mine];
        memcpy(head, &mine_len, sizeof mine_len);
        memcpy(head + sizeof mine_len, &mine, mine_len);
        jput(op, (uint32_t)fd, r, e, NULL, head, sizeof mine_len + mine_len, NULL, 0);
        errno = e;
        return r;
    }
    }
#undef CALL_IT
}

EXPORT int accept(int fd, struct sockaddr *addr, socklen_t *alen) {
    NEED(accept);
    return fills_address(OP_ACCEPT, fd, real_accept, NULL, 0, addr, alen, 0);
}
EXPORT int accept4(int fd, struct sockaddr *addr, socklen_t *alen, int flags) {
    NEED(accept4);
    return fills_address(OP_ACCEPT, fd, NULL, real_accept4, flags, addr, alen, 0);
}
EXPORT int getsockname(int fd, struct sockaddr *addr, socklen_t *alen) {
    NEED(getsockname);
    return fills_address(OP_GETSOCKNAME, fd, real_getsockname, NULL, 0, addr, alen, 1);
}
EXPORT int getpeername(int fd, struct sockaddr *addr, socklen_t *alen) {
    NEED(getpeername);
    return fills_address(OP_GETPEERNAME, fd, real_getpeername, NULL, 0, addr, alen, 1);
}

EXPORT int getsockopt(int fd, int level, int name, void *value, socklen_t *len) {
    NEED(getsockopt);
    switch (route()) {
    case R_REAL:
        return real_getsockopt(fd, level, name, value, len);
    case R_SANDBOX:
        return owned(fd) ? real_getsockopt(fd, level, name, value, len) : (int)refuse(OP_GETSOCKOPT, NULL, fd);
    case R_REPLAY: {
        Pending *p = take(OP_GETSOCKOPT, (uint32_t)fd ^ ((uint32_t)name << 16), NULL, 0);
        if (p == NULL)
            return (int)failed();
        long n = payload(p, value, len ? *len : 0);
        if (n < 0)
            return (int)failed();
        if (len)
            *len = (socklen_t)n;
        return (int)answer(p);
    }
    default: {
        int r = real_getsockopt(fd, level, name, value, len);
        int e = errno;
        jput(OP_GETSOCKOPT, (uint32_t)fd ^ ((uint32_t)name << 16), r, e, NULL, value, r == 0 && len ? *len : 0, NULL, 0);
        errno = e;
        return r;
    }
    }
}

/* ---- waiting for descriptors: which were ready is the answer ---- */

EXPORT int select(int n, fd_set *r, fd_set *w, fd_set *x, struct timeval *tv) {
    NEED(select);
    size_t set_bytes = n > 0 ? ((size_t)n + 63) / 64 * 8 : 0;
    if (set_bytes > sizeof(fd_set))
        set_bytes = sizeof(fd_set);
    switch (route()) {
    case R_REAL:
        return real_select(n, r, w, x, tv);
    case R_SANDBOX:
        return (int)refuse(OP_SELECT, NULL, n);
    case R_REPLAY: {
        Pending *p = take(OP_SELECT, (uint32_t)n, NULL, 0);
        if (p == NULL)
            return (int)failed();
        size_t total = p->e.len - p->e.plen;
        char got[3 * sizeof(fd_set) + sizeof(struct timeval)];
        if (total > sizeof got || payload(p, got, sizeof got) < 0)
            return (int)failed();
        size_t at = 0;
        fd_set *sets[3] = {r, w, x};
        for (int k = 0; k < 3; k++) {
            if (sets[k] != NULL && at + set_bytes <= total) {
                memcpy(sets[k], got + at, set_bytes);
                at += set_bytes;
            }
        }
        if (tv != NULL && at + sizeof *tv <= total)
            memcpy(tv, got + at, sizeof *tv);
        return (int)answer(p);
    }
    default: {
        int result = real_select(n, r, w, x, tv);
        int e = errno;
        char got[3 * sizeof(fd_set) + sizeof(struct timeval)];
        size_t at = 0;
        fd_set *sets[3] = {r, w, x};
        for (int k = 0; k < 3; k++) {
            if (sets[k] != NULL) {
                memcpy(got + at, sets[k], set_bytes);
                at += set_bytes;
            }
        }
        if (tv != NULL) {
            memcpy(got + at, tv, sizeof *tv);
            at += sizeof *tv;
        }
        jput(OP_SELECT, (uint32_t)n, result, e, NULL, got, at, NULL, 0);
        errno = e;
        return result;
    }
    }
}

EXPORT int poll(struct pollfd *fds, nfds_t n, int timeout) {
    NEED(poll);
    switch (route()) {
    case R_REAL:
        return real_poll(fds, n, timeout);
    case R_SANDBOX: {
        for (nfds_t k = 0; k < n; k++)
            if (!sandbox_fd_ok(fds[k].fd))
                return (int)refuse(OP_POLL, NULL, fds[k].fd);
        return real_poll(fds, n, timeout);
    }
    case R_REPLAY: {
        Pending *p = take(OP_POLL, (uint32_t)n, NULL, 0);
        if (p == NULL)
            return (int)failed();
        size_t want = n * sizeof(short);
        short *events = want ? malloc(want) : NULL;
        if (want && (events == NULL || payload(p, events, want) < 0)) {
            free(events);
            return (int)failed();
        }
        for (nfds_t k = 0; k < n; k++)
            fds[k].revents = events[k];
        free(events);
        return (int)answer(p);
    }
    default: {
        int r = real_poll(fds, n, timeout);
        int e = errno;
        short *events = n ? malloc(n * sizeof(short)) : NULL;
        for (nfds_t k = 0; events && k < n; k++)
            events[k] = r >= 0 ? fds[k].revents : 0;
        jput(OP_POLL, (uint32_t)n, r, e, NULL, events, events ? n * sizeof(short) : 0, NULL, 0);
        free(events);
        errno = e;
        return r;
    }
    }
}

EXPORT int epoll_ctl(int epfd, int op, int fd, struct epoll_event *event) {
    NEED(epoll_ctl);
    switch (route()) {
    case R_SANDBOX:
        return owned(epfd) ? real_epoll_ctl(epfd, op, fd, event) : (int)refuse(OP_EPOLL_CTL, NULL, epfd);
    default:
        EFFECT(OP_EPOLL_CTL, (uint32_t)epfd, NULL, epfd, real_epoll_ctl(epfd, op, fd, event));
    }
}
EXPORT int epoll_wait(int epfd, struct epoll_event *events, int max, int timeout) {
    NEED(epoll_wait);
    FILLS(OP_EPOLL_WAIT, (uint32_t)epfd, NULL, real_epoll_wait(epfd, events, max, timeout), events,
          (size_t)(max > 0 ? max : 0) * sizeof *events, (size_t)r_ * sizeof *events, owned(epfd), epfd);
}

/* ---- time ---- */

static int journal_clock(clockid_t clock) {
    if (clock == CLOCK_REALTIME || clock == CLOCK_REALTIME_COARSE || clock == CLOCK_TAI)
        return 1;
    /* CPython reads the monotonic clock while it waits for the GIL: only the program's own reads,
     * made holding it, belong to the run */
    return gil_held == NULL || gil_held();
}

EXPORT int clock_gettime(clockid_t clock, struct timespec *ts) {
    NEED(clock_gettime);
    int r = route();
    if ((r == R_RECORD || r == R_REPLAY) && !journal_clock(clock))
        return real_clock_gettime(clock, ts);
    switch (r) {
    case R_REAL:
    case R_SANDBOX:
        return real_clock_gettime(clock, ts);
    case R_REPLAY: {
        Pending *p = take(OP_CLOCK, (uint32_t)clock, NULL, 0);
        if (p == NULL || payload(p, ts, sizeof *ts) < 0)
            return (int)failed();
        return (int)answer(p);
    }
    default: {
        int result = real_clock_gettime(clock, ts);
        jput(OP_CLOCK, (uint32_t)clock, result, errno, NULL, ts, result == 0 ? sizeof *ts : 0, NULL, 0);
        return result;
    }
    }
}
EXPORT int gettimeofday(struct timeval *tv, void *tz) {
    NEED(gettimeofday);
    struct timeval *out = tv; /* (declared nonnull, yet C code passes NULL for the zone alone) */
    FILLS(OP_GETTIMEOFDAY, 0, NULL, real_gettimeofday(out, tz), out, out ? sizeof *out : 0, r_ == 0 && out ? sizeof *out : 0, 1, -1);
}
EXPORT time_t time(time_t *out) {
    NEED(time);
    switch (route()) {
    case R_REAL:
    case R_SANDBOX:
        return real_time(out);
    case R_REPLAY: {
        Pending *p = take(OP_TIME, 0, NULL, 0);
        if (p == NULL)
            return (time_t)failed();
        time_t t = (time_t)p->e.ret;
        if (out)
            *out = t;
        return t;
    }
    default: {
        time_t t = real_time(out);
        jput(OP_TIME, 0, t, errno, NULL, NULL, 0, NULL, 0);
        return t;
    }
    }
}
EXPORT clock_t times(struct tms *buf) {
    NEED(times);
    FILLS(OP_TIMES, 0, NULL, real_times(buf), buf, buf ? sizeof *buf : 0, buf && r_ != (clock_t)-1 ? sizeof *buf : 0, 1, -1);
}
EXPORT int getrusage(int who, struct rusage *usage) {
    NEED(getrusage);
    FILLS(OP_RUSAGE, (uint32_t)who, NULL, real_getrusage(who, usage), usage, sizeof *usage, r_ == 0 ? sizeof *usage : 0, 1, -1);
}

/* A sleep in a replay takes no time: the recording slept it. */
#define SLEEPS(key, call, remaining)                                                  \
    do {                                                                              \
        switch (route()) {                                                            \
        case R_REAL:                                                                  \
        case R_SANDBOX:                                                               \
            return call;                                                              \
        case R_REPLAY: {                                                              \
            Pending *p_ = take(OP_SLEEP, key, NULL, 0);                               \
            if (p_ == NULL)                                                           \
                return failed();                                                      \
            if ((remaining) != NULL && p_->e.len > p_->e.plen && payload(p_, (remaining), sizeof *(remaining)) < 0) \
                return failed();                                                      \
            return answer(p_);                                                        \
        }                                                                             \
        default: {                                                                    \
            long r_ = (long)(call);                                                   \
            int e_ = errno;                                                           \
            jput(OP_SLEEP, key, r_, e_, NULL, (remaining), (remaining) && r_ != 0 ? sizeof *(remaining) : 0, NULL, 0); \
            errno = e_;                                                               \
            return r_;                                                                \
        }                                                                             \
        }                                                                             \
    } while (0)

EXPORT int clock_nanosleep(clockid_t clock, int flags, const struct timespec *req, struct timespec *rem) {
    NEED(clock_nanosleep);
    /* (clock_nanosleep reports failure by its result, not errno: the result is journaled as is) */
    SLEEPS((uint32_t)clock, real_clock_nanosleep(clock, flags, req, rem), rem);
}
EXPORT int nanosleep(const struct timespec *req, struct timespec *rem) {
    NEED(nanosleep);
    SLEEPS(1000, real_nanosleep(req, rem), rem);
}
EXPORT int usleep(useconds_t us) {
    NEED(usleep);
    struct timespec *none = NULL;
    SLEEPS(1001, real_usleep(us), none);
}
EXPORT unsigned int sleep(unsigned int seconds) {
    NEED(sleep);
    struct timespec *none = NULL;
    SLEEPS(1002, real_sleep(seconds), none);
}

/* ---- random bytes, process ids ---- */

EXPORT ssize_t getrandom(void *buf, size_t n, unsigned int flags) {
    NEED(getrandom);
    FILLS(OP_RANDOM, 0, NULL, real_getrandom(buf, n, flags), buf, n, r_, 1, -1);
}
EXPORT int getentropy(void *buf, size_t n) {
    NEED(getentropy);
    FILLS(OP_RANDOM, 1, NULL, real_getentropy(buf, n), buf, n, r_ == 0 ? n : 0, 1, -1);
}
EXPORT pid_t getpid(void) {
    NEED(getpid);
    QUERY(OP_GETPID, 0, NULL, real_getpid());
}
EXPORT pid_t getppid(void) {
    NEED(getppid);
    QUERY(OP_GETPPID, 0, NULL, real_getppid());
}

/* ---- processes: a replay starts none; it is told the pid the recording's child had, and what
 * waiting for it gave ---- */

EXPORT pid_t fork(void) {
    NEED(fork);
    switch (route()) {
    case R_REAL:
        return real_fork();
    case R_SANDBOX:
        return (pid_t)refuse(OP_FORK, NULL, -1);
    case R_REPLAY: {
        Pending *p = take(OP_FORK, 0, NULL, 0);
        return p ? (pid_t)answer(p) : (pid_t)failed();
    }
    default: {
        pid_t r = real_fork();
        if (r != 0) /* (the child is a real process the program started: not recorded, see atfork) */
            jput(OP_FORK, 0, r, errno, NULL, NULL, 0, NULL, 0);
        return r;
    }
    }
}

/* vfork's child borrows its parent's stack: it cannot return through a wrapper. A fork does what
 * vfork does here (subprocess's child execs at once). */
EXPORT pid_t vfork(void) { return fork(); }

static int spawn(int (*real)(pid_t *, const char *, const posix_spawn_file_actions_t *, const posix_spawnattr_t *,
                             char *const[], char *const[]),
                 pid_t *pid, const char *path, const posix_spawn_file_actions_t *actions, const posix_spawnattr_t *attr,
                 char *const argv[], char *const envp[]) {
    switch (route()) {
    case R_REAL:
        return real(pid, path, actions, attr, argv, envp);
    case R_SANDBOX:
        refuse(OP_SPAWN, path, -1);
        return EPERM;
    case R_REPLAY: {
        Pending *p = take(OP_SPAWN, fnv(path), path, 0);
        if (p == NULL)
            return EIO;
        pid_t got = 0;
        if (p->e.len > p->e.plen && payload(p, &got, sizeof got) < 0)
            return EIO;
        if (pid)
            *pid = got;
        return (int)p->e.ret;
    }
    default: {
        pid_t mine = 0;
        int r = real(&mine, path, actions, attr, argv, envp);
        if (pid)
            *pid = mine;
        jput(OP_SPAWN, fnv(path), r, 0, path, &mine, sizeof mine, NULL, 0);
        return r;
    }
    }
}
EXPORT int posix_spawn(pid_t *pid, const char *path, const posix_spawn_file_actions_t *actions,
                       const posix_spawnattr_t *attr, char *const argv[], char *const envp[]) {
    NEED(posix_spawn);
    return spawn(real_posix_spawn, pid, path, actions, attr, argv, envp);
}
EXPORT int posix_spawnp(pid_t *pid, const char *path, const posix_spawn_file_actions_t *actions,
                        const posix_spawnattr_t *attr, char *const argv[], char *const envp[]) {
    NEED(posix_spawnp);
    return spawn(real_posix_spawnp, pid, path, actions, attr, argv, envp);
}
EXPORT int system(const char *command) {
    NEED(system);
    EFFECT(OP_SYSTEM, fnv(command), command, -1, real_system(command));
}

/* waiting: the status (and usage) the recording got */
static pid_t waits(pid_t pid, int *status, int options, struct rusage *usage, int kind) {
    NEED(wait4);
    switch (route()) {
    case R_REAL:
        return real_wait4(pid, status, options, usage);
    case R_SANDBOX:
        return (pid_t)refuse(OP_WAIT, NULL, pid);
    case R_REPLAY: {
        Pending *p = take(OP_WAIT, (uint32_t)kind, NULL, 0);
        if (p == NULL)
            return (pid_t)failed();
        char got[sizeof(int) + sizeof(struct rusage)];
        long n = payload(p, got, sizeof got);
        if (n < 0)
            return (pid_t)failed();
        if (status && n >= (long)sizeof(int))
            memcpy(status, got, sizeof(int));
        if (usage && n >= (long)sizeof got)
            memcpy(usage, got + sizeof(int), sizeof *usage);
        return (pid_t)answer(p);
    }
    default: {
        int mine = 0;
        struct rusage used;
        memset(&used, 0, sizeof used);
        pid_t r = real_wait4(pid, &mine, options, usage ? &used : NULL);
        int e = errno;
        if (status)
            *status = mine;
        if (usage)
            *usage = used;
        char got[sizeof(int) + sizeof(struct rusage)];
        memcpy(got, &mine, sizeof mine);
        memcpy(got + sizeof mine, &used, sizeof used);
        jput(OP_WAIT, (uint32_t)kind, r, e, NULL, got, r > 0 ? sizeof got : 0, NULL, 0);
        errno = e;
        return r;
    }
    }
}
EXPORT pid_t wait(int *status) { return waits(-1, status, 0, NULL, 0); }
EXPORT pid_t waitpid(pid_t pid, int *status, int options) { return waits(pid, status, options, NULL, 0); }
EXPORT pid_t wait3(int *status, int options, struct rusage *usage) { return waits(-1, status, options, usage, 0); }
EXPORT pid_t wait4(pid_t pid, int *status, int options, struct rusage *usage) { return waits(pid, status, options, usage, 0); }
EXPORT int waitid(idtype_t idtype, id_t id, siginfo_t *info, int options) {
    NEED(waitid);
    FILLS(OP_WAITID, 0, NULL, real_waitid(idtype, id, info, options), info, info ? sizeof *info : 0,
          r_ == 0 && info ? sizeof *info : 0, 0, -1);
}

/* A signal to the program itself is delivered in a replay too (its handler is part of the run);
 * one to any other process is not sent again. The journal marks a signal the program sent itself. */
#define SENT_TO_ITSELF (-1)
EXPORT int kill(pid_t pid, int sig) {
    NEED(kill);
    NEED(getpid);
    uint32_t key = (uint32_t)pid ^ ((uint32_t)sig << 24);
    switch (route()) {
    case R_REAL:
        return real_kill(pid, sig);
    case R_SANDBOX:
        if (pid == real_getpid() || sig == 0)
            return real_kill(pid, sig);
        return (int)refuse(OP_KILL, NULL, pid);
    case R_REPLAY: {
        Pending *p = take(OP_KILL, key, NULL, 0);
        if (p == NULL)
            return (int)failed();
        if (p->e.err == SENT_TO_ITSELF)
            return raise(sig);
        return (int)answer(p);
    }
    default: {
        int self = pid == real_getpid() && sig != 0;
        int r = real_kill(pid, sig);
        int e = errno;
        jput(OP_KILL, key, r, self && r == 0 ? SENT_TO_ITSELF : e, NULL, NULL, 0, NULL, 0);
        errno = e;
        return r;
    }
    }
}
EXPORT int killpg(pid_t group, int sig) {
    NEED(killpg);
    EFFECT(OP_KILL, (uint32_t)group ^ 0x80000000u, NULL, group, real_killpg(group, sig));
}

/* exec replaces the program: the recorder ends the recording first (runner.py); a replay never
 * gets this far, and if it did, it must not run another program. */
EXPORT int execv(const char *path, char *const argv[]) {
    NEED(execv);
    int r = route();
    if (r == R_REPLAY || r == R_SANDBOX)
        return (int)refuse(OP_EXEC, path, -1);
    return real_execv(path, argv);
}
EXPORT int execve(const char *path, char *const argv[], char *const envp[]) {
    NEED(execve);
    int r = route();
    if (r == R_REPLAY || r == R_SANDBOX)
        return (int)refuse(OP_EXEC, path, -1);
    return real_execve(path, argv, envp);
}
EXPORT int fexecve(int fd, char *const argv[], char *const envp[]) {
    NEED(fexecve);
    int r = route();
    if (r == R_REPLAY || r == R_SANDBOX)
        return (int)refuse(OP_EXEC, NULL, fd);
    return real_fexecve(fd, argv, envp);
}

/* ---- directories: a replay's DIR is ours, filled from the journal ---- */

#define FAKE_DIR_MAGIC 0x6e644a44u
typedef struct {
    uint32_t magic;
    int fd;
    struct dirent64 entry;
} FakeDir;

static int is_fake(DIR *dir) { return dir != NULL && ((FakeDir *)dir)->magic == FAKE_DIR_MAGIC; }
/* (a real DIR begins with its descriptor, an int far below the magic: they cannot be confused) */

static DIR *opens_dir(const char *path, int fd, DIR *(*call_path)(const char *), DIR *(*call_fd)(int)) {
    uint32_t key = path ? fnv(path) : (uint32_t)fd;
    switch (route()) {
    case R_REAL:
        return path ? call_path(path) : call_fd(fd);
    case R_SANDBOX:
        if (path || owned(fd))
            return path ? call_path(path) : call_fd(fd);
        refuse(OP_OPENDIR, NULL, fd);
        return NULL;
    case R_REPLAY: {
        Pending *p = take(OP_OPENDIR, key, path, 0);
        if (p == NULL) {
            errno = EIO;
            return NULL;
        }
        if (p->e.ret == 0) {
            errno = p->e.err;
            return NULL;
        }
        FakeDir *dir = calloc(1, sizeof *dir);
        if (dir == NULL)
            return NULL;
        dir->magic = FAKE_DIR_MAGIC;
        dir->fd = path ? -1 : fd;
        return (DIR *)dir;
    }
    default: {
        DIR *dir = path ? call_path(path) : call_fd(fd);
        jput(OP_OPENDIR, key, dir != NULL, errno, path, NULL, 0, NULL, 0);
        return dir;
    }
    }
}

EXPORT DIR *opendir(const char *path) {
    NEED(opendir);
    return opens_dir(path, -1, real_opendir, NULL);
}
EXPORT DIR *fdopendir(int fd) {
    NEED(fdopendir);
    return opens_dir(NULL, fd, NULL, real_fdopendir);
}

static struct dirent64 *reads_dir(DIR *dir) {
    NEED(readdir64);
    if (is_fake(dir)) {
        FakeDir *fake = (FakeDir *)dir;
        Pending *p = take(OP_READDIR, 0, NULL, 0);
        if (p == NULL) {
            errno = EIO;
            return NULL;
        }
        if (p->e.ret == 0) {
            errno = p->e.err;
            return NULL;
        }
        memset(&fake->entry, 0, sizeof fake->entry);
        if (payload(p, &fake->entry, sizeof fake->entry) < 0) {
            errno = EIO;
            return NULL;
        }
        return &fake->entry;
    }
    if (route() != R_RECORD)
        return real_readdir64(dir);
    int saved = errno;
    errno = 0;
    struct dirent64 *entry = real_readdir64(dir);
    int e = errno;
    size_t size = entry ? offsetof(struct dirent64, d_name) + strlen(entry->d_name) + 1 : 0;
    jput(OP_READDIR, 0, entry != NULL, e, NULL, entry, size, NULL, 0);
    errno = entry ? saved : e;
    return entry;
}

EXPORT struct dirent64 *readdir64(DIR *dir) { return reads_dir(dir); }
EXPORT struct dirent *readdir(DIR *dir) {
    /* (on 64-bit Linux struct dirent and struct dirent64 are the same) */
    return (struct dirent *)reads_dir(dir);
}
EXPORT int closedir(DIR *dir) {
    NEED(closedir);
    if (is_fake(dir)) {
        Pending *p = take(OP_CLOSEDIR, 0, NULL, 1);
        ((FakeDir *)dir)->magic = 0;
        free(dir);
        return p ? (int)answer(p) : 0;
    }
    int r = real_closedir(dir);
    if (route() == R_RECORD)
        jput(OP_CLOSEDIR, 0, r, errno, NULL, NULL, 0, NULL, 0);
    return r;
}
EXPORT void rewinddir(DIR *dir) {
    NEED(rewinddir);
    if (is_fake(dir)) {
        take(OP_REWINDDIR, 0, NULL, 0);
        return;
    }
    real_rewinddir(dir);
    if (route() == R_RECORD)
        jput(OP_REWINDDIR, 0, 0, 0, NULL, NULL, 0, NULL, 0);
}
EXPORT int dirfd(DIR *dir) {
    NEED(dirfd);
    if (is_fake(dir)) {
        Pending *p = take(OP_DIRFD, 0, NULL, 0);
        return p ? (int)answer(p) : (int)failed();
    }
    int r = real_dirfd(dir);
    if (route() == R_RECORD)
        jput(OP_DIRFD, 0, r, errno, NULL, NULL, 0, NULL, 0);
    return r;
}

/* ---- name resolution: the answer's list, rebuilt in a replay ---- */

typedef struct {
    struct addrinfo info;
    struct sockaddr_storage addr;
    char name[];
} FakeInfo;

/* the lists a replay made (freeaddrinfo must tell them from the C library's) */
#define FAKE_LISTS 64
static struct addrinfo *g_fake_lists[FAKE_LISTS];

static void remember_list(struct addrinfo *head) {
    for (int k = 0; k < FAKE_LISTS; k++)
        if (g_fake_lists[k] == NULL) {
            g_fake_lists[k] = head;
            return;
        }
}

static int forget_list(struct addrinfo *head) {
    for (int k = 0; k < FAKE_LISTS; k++)
        if (g_fake_lists[k] == head && head != NULL) {
            g_fake_lists[k] = NULL;
            return 1;
        }
    return 0;
}

EXPORT int getaddrinfo(const char *node, const char *service, const struct addrinfo *hints, struct addrinfo **res) {
    NEED(getaddrinfo);
    uint32_t key = fnv(node) ^ (fnv(service) * 31u);
    switch (route()) {
    case R_REAL:
        return real_getaddrinfo(node, service, hints, res);
    case R_SANDBOX:
        refuse(OP_GETADDRINFO, node, -1);
        return EAI_FAIL;
    case R_REPLAY: {
        Pending *p = take(OP_GETADDRINFO, key, node, 0);
        if (p == NULL)
            return EAI_FAIL;
        size_t total = p->e.len - p->e.plen;
        char *all = total ? malloc(total) : NULL;
        if (total && (all == NULL || payload(p, all, total) < 0)) {
            free(all);
            return EAI_FAIL;
        }
        struct addrinfo *head = NULL, **tail = &head;
        size_t at = 0;
        while (at + 6 * sizeof(int32_t) <= total) {
            int32_t f[6];
            memcpy(f, all + at, sizeof f);
            at += sizeof f;
            size_t addrlen = (size_t)f[4], namelen = (size_t)f[5];
            if (at + addrlen + namelen > total || addrlen > sizeof(struct sockaddr_storage))
                break;
            FakeInfo *item = calloc(1, sizeof *item + namelen + 1);
            if (item == NULL)
                break;
            item->info.ai_flags = f[0];
            item->info.ai_family = f[1];
            item->info.ai_socktype = f[2];
            item->info.ai_protocol = f[3];
            item->info.ai_addrlen = (socklen_t)addrlen;
            memcpy(&item->addr, all + at, addrlen);
            item->info.ai_addr = (struct sockaddr *)&item->addr;
            at += addrlen;
            if (namelen) {
                memcpy(item->name, all + at, namelen);
                item->info.ai_canonname = item->name;
            }
            at += namelen;
            *tail = &item->info;
            tail = &item->info.ai_next;
        }
        free(all);
        remember_list(head);
        *res = head;
        return (int)p->e.ret;
    }
    default: {
        int r = real_getaddrinfo(node, service, hints, res);
        size_t total = 0;
        for (struct addrinfo *a = r == 0 ? *res : NULL; a; a = a->ai_next)
            total += 6 * sizeof(int32_t) + a->ai_addrlen + (a->ai_canonname ? strlen(a->ai_canonname) : 0);
        char *all = total ? malloc(total) : NULL;
        size_t at = 0;
        for (struct addrinfo *a = r == 0 && all ? *res : NULL; a; a = a->ai_next) {
            int32_t namelen = a->ai_canonname ? (int32_t)strlen(a->ai_canonname) : 0;
            int32_t f[6] = {a->ai_flags, a->ai_family, a->ai_socktype, a->ai_protocol, (int32_t)a->ai_addrlen, namelen};
            memcpy(all + at, f, sizeof f);
            at += sizeof f;
            memcpy(all + at, a->ai_addr, a->ai_addrlen);
            at += a->ai_addrlen;
            memcpy(all + at, a->ai_canonname, (size_t)namelen);
            at += (size_t)namelen;
        }
        jput(OP_GETADDRINFO, key, r, 0, node, all, at, NULL, 0);
        free(all);
        return r;
    }
    }
}

EXPORT void freeaddrinfo(struct addrinfo *list) {
    NEED(freeaddrinfo);
    if (forget_list(list)) {
        while (list != NULL) {
            struct addrinfo *next_ = list->ai_next;
            free(list);
            list = next_;
        }
        return;
    }
    real_freeaddrinfo(list);
}

EXPORT int getnameinfo(const struct sockaddr *addr, socklen_t alen, char *host, socklen_t hostlen, char *serv,
                       socklen_t servlen, int flags) {
    NEED(getnameinfo);
    switch (route()) {
    case R_REAL:
        return real_getnameinfo(addr, alen, host, hostlen, serv, servlen, flags);
    case R_SANDBOX:
        refuse(OP_GETNAMEINFO, NULL, -1);
        return EAI_FAIL;
    case R_REPLAY: {
        Pending *p = take(OP_GETNAMEINFO, 0, NULL, 0);
        if (p == NULL)
            return EAI_FAIL;
        char got[NI_MAXHOST + NI_MAXSERV + 2];
        long n = payload(p, got, sizeof got);
        if (n < 0)
            return EAI_FAIL;
        size_t h = strnlen(got, (size_t)n);
        if (host && hostlen)
            snprintf(host, hostlen, "%.*s", (int)h, got);
        if (serv && servlen && (long)h + 1 < n)
            snprintf(serv, servlen, "%s", got + h + 1);
        return (int)p->e.ret;
    }
    default: {
        int r = real_getnameinfo(addr, alen, host, hostlen, serv, servlen, flags);
        char got[NI_MAXHOST + NI_MAXSERV + 2];
        int n = snprintf(got, sizeof got, "%s", r == 0 && host ? host : "");
        int m = snprintf(got + n + 1, sizeof got - (size_t)n - 1, "%s", r == 0 && serv ? serv : "");
        jput(OP_GETNAMEINFO, 0, r, 0, NULL, got, (size_t)n + 1 + (size_t)m + 1, NULL, 0);
        return r;
    }
    }
}

/* gethostbyname_r / gethostbyaddr_r (socket.gethostbyaddr, getfqdn: an HTTP server's start): the
 * answer's struct hostent, written flat into the journal and laid out again in the caller's buffer. */
static size_t hostent_flat(const struct hostent *h, char *out, size_t cap) {
    size_t at = 0;
#define PUT(src, n)                          \
    do {                                     \
        if (at + (n) > cap)                  \
            return 0;                        \
        memcpy(out + at, (src), (n));        \
        at += (n);                           \
    } while (0)
    int32_t n_aliases = 0, n_addrs = 0, type = h->h_addrtype, length = h->h_length;
    while (h->h_aliases && h->h_aliases[n_aliases])
        n_aliases++;
    while (h->h_addr_list && h->h_addr_list[n_addrs])
        n_addrs++;
    const char *name = h->h_name ? h->h_name : "";
    PUT(name, strlen(name) + 1);
    PUT(&n_aliases, 4);
    for (int k = 0; k < n_aliases; k++)
        PUT(h->h_aliases[k], strlen(h->h_aliases[k]) + 1);
    PUT(&type, 4);
    PUT(&length, 4);
    PUT(&n_addrs, 4);
    for (int k = 0; k < n_addrs; k++)
        PUT(h->h_addr_list[k], (size_t)length);
#undef PUT
    return at;
}

/* Lay a flat hostent out in `buf` (pointer arrays first, then the strings and addresses). */
static int hostent_unflat(const char *flat, size_t n, struct hostent *h, char *buf, size_t buflen) {
    size_t at = 0;
    const char *name = flat;
    size_t name_len = strnlen(flat, n);
    if (name_len == n)
        return -1;
    at = name_len + 1;
    int32_t n_aliases, type, length, n_addrs;
    if (at + 4 > n)
        return -1;
    memcpy(&n_aliases, flat + at, 4);
    at += 4;
    const char *aliases = flat + at;
    for (int k = 0; k < n_aliases; k++) {
        size_t len = strnlen(flat + at, n - at);
        if (at + len >= n)
            return -1;
        at += len + 1;
    }
    size_t aliases_bytes = (size_t)(flat + at - aliases);
    if (at + 12 > n)
        return -1;
    memcpy(&type, flat + at, 4);
    memcpy(&length, flat + at + 4, 4);
    memcpy(&n_addrs, flat + at + 8, 4);
    at += 12;
    if (n_aliases < 0 || n_addrs < 0 || length < 0 || at + (size_t)n_addrs * (size_t)length > n)
        return -1;
    size_t pointers = ((size_t)n_aliases + 1 + (size_t)n_addrs + 1) * sizeof(char *);
    size_t need = pointers + name_len + 1 + aliases_bytes + (size_t)n_addrs * (size_t)length;
    if (need > buflen)
        return ERANGE;
    char **alias_ptrs = (char **)buf;
    char **addr_ptrs = alias_ptrs + n_aliases + 1;
    char *data = buf + pointers;
    memcpy(data, name, name_len + 1);
    h->h_name = data;
    data += name_len + 1;
    memcpy(data, aliases, aliases_bytes);
    for (int k = 0; k < n_aliases; k++) {
        alias_ptrs[k] = data;
        data += strlen(data) + 1;
    }
    alias_ptrs[n_aliases] = NULL;
    memcpy(data, flat + at, (size_t)n_addrs * (size_t)length);
    for (int k = 0; k < n_addrs; k++)
        addr_ptrs[k] = data + (size_t)k * (size_t)length;
    addr_ptrs[n_addrs] = NULL;
    h->h_aliases = alias_ptrs;
    h->h_addr_list = addr_ptrs;
    h->h_addrtype = type;
    h->h_length = length;
    return 0;
}

static int host_lookup(uint32_t key, const char *label, int (*perform)(void *), void *ctx, struct hostent *ret, char *buf,
                       size_t buflen, struct hostent **result, int *h_errnop) {
    switch (route()) {
    case R_REAL:
        return perform(ctx);
    case R_SANDBOX:
        refuse(OP_GETHOSTBY, label, -1);
        *result = NULL;
        if (h_errnop)
            *h_errnop = NO_RECOVERY;
        return EPERM;
    case R_REPLAY: {
        Pending *p = take(OP_GETHOSTBY, key, label, 0);
        *result = NULL;
        if (p == NULL) {
            if (h_errnop)
                *h_errnop = NO_RECOVERY;
            return EIO;
        }
        if (h_errnop)
            *h_errnop = p->e.err;
        size_t n = p->e.len - p->e.plen;
        if (p->e.ret != 0 || n == 0)
            return (int)p->e.ret;
        char *flat = malloc(n);
        if (flat == NULL || payload(p, flat, n) < 0) {
            free(flat);
            return EIO;
        }
        int laid = hostent_unflat(flat, n, ret, buf, buflen);
        free(flat);
        if (laid != 0)
            return laid < 0 ? EIO : laid;
        *result = ret;
        return 0;
    }
    default: {
        int r = perform(ctx);
        char flat[8192];
        size_t n = r == 0 && *result != NULL ? hostent_flat(*result, flat, sizeof flat) : 0;
        jput(OP_GETHOSTBY, key, r, h_errnop ? *h_errnop : 0, label, flat, n, NULL, 0);
        return r;
    }
    }
}

typedef struct {
    const char *name;
    const void *addr;
    socklen_t len;
    int type;
    struct hostent *ret;
    char *buf;
    size_t buflen;
    struct hostent **result;
    int *h_errnop;
} HostCall;

static int by_name(void *raw) {
    HostCall *c = raw;
    return real_gethostbyname_r(c->name, c->ret, c->buf, c->buflen, c->result, c->h_errnop);
}
static int by_addr(void *raw) {
    HostCall *c = raw;
    return real_gethostbyaddr_r(c->addr, c->len, c->type, c->ret, c->buf, c->buflen, c->result, c->h_errnop);
}

EXPORT int gethostbyname_r(const char *name, struct hostent *ret, char *buf, size_t buflen, struct hostent **result,
                           int *h_errnop) {
    NEED(gethostbyname_r);
    HostCall call = {name, NULL, 0, 0, ret, buf, buflen, result, h_errnop};
    return host_lookup(fnv(name), name, by_name, &call, ret, buf, buflen, result, h_errnop);
}
EXPORT int gethostbyaddr_r(const void *addr, socklen_t len, int type, struct hostent *ret, char *buf, size_t buflen,
                           struct hostent **result, int *h_errnop) {
    NEED(gethostbyaddr_r);
    HostCall call = {NULL, addr, len, type, ret, buf, buflen, result, h_errnop};
    uint32_t key = 2166136261u;
    for (socklen_t k = 0; k < len; k++)
        key = (key ^ ((const unsigned char *)addr)[k]) * 16777619u;
    return host_lookup(key, NULL, by_addr, &call, ret, buf, buflen, result, h_errnop);
}

/* ---- memory mapped files: a replay maps what the recording mapped, privately ---- */

static void *maps(void *addr, size_t len, int prot, int flags, int fd, off64_t off,
                  void *(*call)(void *, size_t, int, int, int, off64_t)) {
    if ((flags & MAP_ANONYMOUS) || fd < 0)
        return call(addr, len, prot, flags, fd, off);
    switch (route()) {
    case R_REAL:
        return call(addr, len, prot, flags, fd, off);
    case R_SANDBOX:
        if (owned(fd) && !((flags & MAP_SHARED) && (prot & PROT_WRITE)))
            return call(addr, len, prot, flags, fd, off);
        refuse(OP_MMAP, NULL, fd);
        return MAP_FAILED;
    case R_REPLAY: {
        Pending *p = take(OP_MMAP, (uint32_t)fd, NULL, 0);
        if (p == NULL) {
            errno = EIO;
            return MAP_FAILED;
        }
        if (p->e.ret == 0) {
            errno = p->e.err;
            return MAP_FAILED;
        }
        void *where = call(addr, len, prot | PROT_WRITE, (flags & ~(MAP_SHARED | MAP_SHARED_VALIDATE)) | MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (where == MAP_FAILED)
            return where;
        if (payload(p, where, len) < 0) {
            munmap(where, len);
            errno = EIO;
            return MAP_FAILED;
        }
        if (!(prot & PROT_WRITE))
            mprotect(where, len, prot);
        return where;
    }
    default: {
        void *where = call(addr, len, prot, flags, fd, off);
        int e = errno;
        if (where == MAP_FAILED) {
            jput(OP_MMAP, (uint32_t)fd, 0, e, NULL, NULL, 0, NULL, 0);
        } else {
            /* what the mapping holds now, read through the file (a page past its end would fault) */
            char *copy = malloc(len);
            ssize_t got = 0;
            if (copy != NULL) {
                NEED(pread64);
                t_inside = 1;
                got = real_pread64(fd, copy, len, off);
                t_inside = 0;
                if (got < 0)
                    got = 0;
            }
            jput(OP_MMAP, (uint32_t)fd, 1, 0, NULL, copy, (size_t)got, NULL, 0);
            free(copy);
        }
        errno = e;
        return where;
    }
    }
}
EXPORT void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off) {
    NEED(mmap);
    return maps(addr, len, prot, flags, fd, off, (void *(*)(void *, size_t, int, int, int, off64_t))real_mmap);
}
EXPORT void *mmap64(void *addr, size_t len, int prot, int flags, int fd, off64_t off) {
    NEED(mmap64);
    return maps(addr, len, prot, flags, fd, off, real_mmap64 ? real_mmap64 : (void *(*)(void *, size_t, int, int, int, off64_t))real_mmap);
}
EXPORT int msync(void *addr, size_t len, int flags) {
    NEED(msync);
    switch (route()) {
    case R_REPLAY:
        return 0; /* (a replay's mappings are private: there is nothing to write back) */
    default:
        return real_msync(addr, len, flags);
    }
}

/* ---- threads started from the sandbox stay in it ---- */

typedef struct {
    void *(*start)(void *);
    void *arg;
} Trampoline;

static void *sandboxed_start(void *raw) {
    Trampoline t = *(Trampoline *)raw;
    free(raw);
    t_ctx = CTX_SANDBOX;
    return t.start(t.arg);
}

EXPORT int pthread_create(pthread_t *thread, const pthread_attr_t *attr, void *(*start)(void *), void *arg) {
    NEED(pthread_create);
    if (t_ctx == CTX_SANDBOX && g_mode != MODE_OFF) {
        Trampoline *t = malloc(sizeof *t);
        if (t == NULL)
            return EAGAIN;
        t->start = start;
        t->arg = arg;
        int r = real_pthread_create(thread, attr, sandboxed_start, t);
        if (r != 0)
            free(t);
        return r;
    }
    return real_pthread_create(thread, attr, start, arg);
}

/* ---- named semaphores (multiprocessing's locks between processes): a replay's are stand-ins, and
 * every wait, post and count on them is answered from the journal. CPython's own locks are unnamed
 * semaphores of this process: they are not in the table and pass straight through. ---- */

#define NAMED_SEMS 256
static sem_t *g_named[NAMED_SEMS];
static int g_named_count;

static int named(sem_t *sem) {
    if (g_named_count == 0)
        return 0;
    for (int k = 0; k < NAMED_SEMS; k++)
        if (g_named[k] == sem)
            return 1;
    return 0;
}
static void name_it(sem_t *sem, int yes) {
    for (int k = 0; k < NAMED_SEMS; k++) {
        if (yes && g_named[k] == NULL) {
            g_named[k] = sem;
            g_named_count++;
            return;
        }
        if (!yes && g_named[k] == sem) {
            g_named[k] = NULL;
            g_named_count--;
            return;
        }
    }
}

EXPORT sem_t *sem_open(const char *name, int flags, ...) {
    NEED(sem_open);
    mode_t mode = 0;
    unsigned int value = 0;
    if (flags & O_CREAT) {
        va_list args;
        va_start(args, flags);
        mode = va_arg(args, mode_t);
        value = va_arg(args, unsigned int);
        va_end(args);
    }
    switch (route()) {
    case R_REAL:
        return real_sem_open(name, flags, mode, value);
    case R_SANDBOX:
        refuse(OP_SEM_OPEN, name, -1);
        return SEM_FAILED;
    case R_REPLAY: {
        Pending *p = take(OP_SEM_OPEN, fnv(name), name, 0);
        if (p == NULL) {
            errno = EIO;
            return SEM_FAILED;
        }
        if (p->e.ret == 0) {
            errno = p->e.err;
            return SEM_FAILED;
        }
        sem_t *stand_in = calloc(1, sizeof(sem_t));
        if (stand_in != NULL)
            name_it(stand_in, 1);
        return stand_in != NULL ? stand_in : SEM_FAILED;
    }
    default: {
        sem_t *sem = real_sem_open(name, flags, mode, value);
        int e = errno;
        if (sem != SEM_FAILED)
            name_it(sem, 1);
        jput(OP_SEM_OPEN, fnv(name), sem != SEM_FAILED, e, name, NULL, 0, NULL, 0);
        errno = e;
        return sem;
    }
    }
}

#define SEM_CALL(sem, which, call)                                                  \
    do {                                                                            \
        if (!named(sem))                                                            \
            return call;                                                            \
        switch (route()) {                                                          \
        case R_REAL:                                                                \
            return call;                                                            \
        case R_SANDBOX:                                                             \
            return (int)refuse(OP_SEM_OP, NULL, which);                             \
        case R_REPLAY: {                                                            \
            Pending *p_ = take(OP_SEM_OP, which, NULL, 0);                          \
            return p_ ? (int)answer(p_) : (int)failed();                            \
        }                                                                           \
        default: {                                                                  \
            int r_ = call;                                                          \
            jput(OP_SEM_OP, which, r_, errno, NULL, NULL, 0, NULL, 0);              \
            return r_;                                                              \
        }                                                                           \
        }                                                                           \
    } while (0)

EXPORT int sem_wait(sem_t *sem) {
    NEED(sem_wait);
    SEM_CALL(sem, 1, real_sem_wait(sem));
}
EXPORT int sem_trywait(sem_t *sem) {
    NEED(sem_trywait);
    SEM_CALL(sem, 2, real_sem_trywait(sem));
}
EXPORT int sem_timedwait(sem_t *sem, const struct timespec *deadline) {
    NEED(sem_timedwait);
    SEM_CALL(sem, 3, real_sem_timedwait(sem, deadline));
}
EXPORT int sem_post(sem_t *sem) {
    NEED(sem_post);
    SEM_CALL(sem, 4, real_sem_post(sem));
}
EXPORT int sem_getvalue(sem_t *sem, int *value) {
    NEED(sem_getvalue);
    if (!named(sem))
        return real_sem_getvalue(sem, value);
    FILLS(OP_SEM_OP, 5, NULL, real_sem_getvalue(sem, value), value, sizeof *value, r_ == 0 ? sizeof *value : 0, 0, -1);
}
EXPORT int sem_close(sem_t *sem) {
    NEED(sem_close);
    if (!named(sem))
        return real_sem_close(sem);
    int r = route();
    if (r == R_REPLAY) { /* (a stand-in, or a copy made before the checkpoint: left as it is) */
        name_it(sem, 0);
        take(OP_SEM_OP, 6, NULL, 1);
        return 0;
    }
    name_it(sem, 0);
    int result = real_sem_close(sem);
    if (r == R_RECORD)
        jput(OP_SEM_OP, 6, result, errno, NULL, NULL, 0, NULL, 0);
    return result;
}
EXPORT int sem_unlink(const char *name) {
    NEED(sem_unlink);
    EFFECT(OP_SEM_UNLINK, fnv(name), name, -1, real_sem_unlink(name));
}
EXPORT int shm_open(const char *name, int flags, mode_t mode) {
    NEED(shm_open);
    OPENS(name, flags, real_shm_open(name, flags, mode));
}
EXPORT int shm_unlink(const char *name) {
    NEED(shm_unlink);
    EFFECT(OP_UNLINK, fnv(name), name, -1, real_shm_unlink(name));
}

/* syscall(): random bytes asked for by number (a fallback some libraries use) */
EXPORT long syscall(long number, ...) {
    va_list args;
    va_start(args, number);
    long a[6];
    for (int k = 0; k < 6; k++)
        a[k] = va_arg(args, long);
    va_end(args);
    if (number == SYS_getrandom)
        return getrandom((void *)a[0], (size_t)a[1], (unsigned int)a[2]);
    static long (*real_syscall)(long, ...);
    if (real_syscall == NULL)
        real_syscall = next_symbol("syscall");
    return real_syscall(number, a[0], a[1], a[2], a[3], a[4], a[5]);
}

/* -- forks: a copy the program made is not recorded; one of ours keeps its place in the journal -- */

static void after_fork_in_child(void) {
    if (t_ctx == CTX_PROGRAM && g_mode != MODE_REPLAY)
        g_mode = MODE_OFF; /* a real process the program started (its own run, unrecorded) */
    /* whatever this process is, the parent writes what was buffered: this copy never does */
    pthread_mutex_init(&j_lock, NULL);
    j_flushed = j_next;
    j_len = 0;
}

__attribute__((constructor)) static void init(void) {
    NEED(read);
    NEED(write);
    NEED(pread64);
    NEED(pwrite64);
    NEED(close);
    NEED(fork);
    NEED(clock_gettime);
    NEED(pthread_create);
    pthread_atfork(NULL, NULL, after_fork_in_child);
    const char *trace = getenv("ND_JOURNAL_TRACE");
    g_trace = trace != NULL && trace[0] == '1';
    /* ND_JOURNAL_TRACE_FILE: to that file instead (a checkpoint's workers write nothing to stderr) */
    const char *trace_file = getenv("ND_JOURNAL_TRACE_FILE");
    if (g_trace && trace_file != NULL) {
        NEED(open);
        g_trace_fd = real_open(trace_file, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
        if (g_trace_fd < 0)
            g_trace_fd = 2;
    }
}

/* -- the seccomp net of a replay ----------------------------------------------------------------- */

#if defined(__x86_64__)
#define NET_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define NET_ARCH AUDIT_ARCH_AARCH64
#endif

#ifdef NET_ARCH
static void net_refused(int sig, siginfo_t *info, void *raw) {
    (void)sig;
    ucontext_t *ctx = raw;
    if (g_net_refused_nr < 0)
        g_net_refused_nr = info->si_syscall;
    g_refused++;
#if defined(__x86_64__)
    ctx->uc_mcontext.gregs[REG_RAX] = -EPERM;
#elif defined(__aarch64__)
    ctx->uc_mcontext.regs[0] = (unsigned long long)-EPERM;
#endif
    if (!g_diverged) {
        g_diverged = 1;
        g_diverged_event = g_counter ? *g_counter : -1;
        /* (no snprintf in a signal handler: the number is turned into a name later) */
    }
}
#endif

#define DENY(nr) BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (nr), 0, 1), BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_TRAP)

EXPORT int nd_journal_install_net(void) {
#ifndef NET_ARCH
    return -1;
#else
    struct sigaction act;
    memset(&act, 0, sizeof act);
    act.sa_sigaction = net_refused;
    act.sa_flags = SA_SIGINFO | SA_NODEFER;
    if (sigaction(SIGSYS, &act, NULL) < 0)
        return -1;
    const unsigned int write_flags = O_WRONLY | O_RDWR | O_CREAT | O_TRUNC | O_APPEND;
    struct sock_filter filter[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, NET_ARCH, 1, 0),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        /* opening for writing: by the flags argument */
#ifdef __NR_open
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_open, 0, 4),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[1])),
        BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, write_flags, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_TRAP),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
#endif
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_openat, 0, 4),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[2])),
        BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, write_flags, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_TRAP),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        /* sending to an address (a connected socket's send passes none) */
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_sendto, 0, 4),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[4])),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0, 1, 0),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_TRAP),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        /* clone3's flags live in memory: make glibc fall back to clone, whose flags are visible */
#ifdef __NR_clone3
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_clone3, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS),
#endif
        DENY(__NR_execve),
        DENY(__NR_execveat),
        DENY(__NR_openat2),
#ifdef __NR_creat
        DENY(__NR_creat),
#endif
#ifdef __NR_unlink
        DENY(__NR_unlink),
#endif
        DENY(__NR_unlinkat),
#ifdef __NR_rename
        DENY(__NR_rename),
#endif
        DENY(__NR_renameat),
        DENY(__NR_renameat2),
#ifdef __NR_mkdir
        DENY(__NR_mkdir),
#endif
        DENY(__NR_mkdirat),
#ifdef __NR_rmdir
        DENY(__NR_rmdir),
#endif
#ifdef __NR_link
        DENY(__NR_link),
#endif
        DENY(__NR_linkat),
#ifdef __NR_symlink
        DENY(__NR_symlink),
#endif
        DENY(__NR_symlinkat),
#ifdef __NR_mknod
        DENY(__NR_mknod),
#endif
        DENY(__NR_mknodat),
#ifdef __NR_chmod
        DENY(__NR_chmod),
#endif
        DENY(__NR_fchmod),
        DENY(__NR_fchmodat),
#ifdef __NR_chown
        DENY(__NR_chown),
#endif
#ifdef __NR_lchown
        DENY(__NR_lchown),
#endif
        DENY(__NR_fchown),
        DENY(__NR_fchownat),
        DENY(__NR_truncate),
        DENY(__NR_ftruncate),
        DENY(__NR_fallocate),
        DENY(__NR_utimensat),
#ifdef __NR_utimes
        DENY(__NR_utimes),
#endif
#ifdef __NR_utime
        DENY(__NR_utime),
#endif
#ifdef __NR_futimesat
        DENY(__NR_futimesat),
#endif
        DENY(__NR_setxattr),
        DENY(__NR_lsetxattr),
        DENY(__NR_fsetxattr),
        DENY(__NR_removexattr),
        DENY(__NR_lremovexattr),
        DENY(__NR_fremovexattr),
        DENY(__NR_connect),
        DENY(__NR_bind),
        DENY(__NR_listen),
        DENY(__NR_sendmsg),
        DENY(__NR_sendmmsg),
        DENY(__NR_flock),
        DENY(__NR_ptrace),
        DENY(__NR_process_vm_writev),
        DENY(__NR_mount),
        DENY(__NR_umount2),
        DENY(__NR_msgsnd),
        DENY(__NR_semop),
        DENY(__NR_semtimedop),
        DENY(__NR_mq_open),
        DENY(__NR_mq_unlink),
        DENY(__NR_mq_timedsend),
        DENY(__NR_io_uring_setup),
        DENY(__NR_name_to_handle_at),
        DENY(__NR_open_by_handle_at),
        DENY(__NR_settimeofday),
        DENY(__NR_clock_settime),
        DENY(__NR_sethostname),
        DENY(__NR_setdomainname),
        DENY(__NR_reboot),
        DENY(__NR_swapon),
        DENY(__NR_swapoff),
        DENY(__NR_chroot),
        DENY(__NR_pivot_root),
        DENY(__NR_acct),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    struct sock_fprog prog = {(unsigned short)(sizeof filter / sizeof filter[0]), filter};
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
        return -1;
    if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog, 0, 0) < 0)
        return -1;
    return 0;
#endif
}

/* The name of a syscall the net refused, for the message. */
static const char *syscall_name(int nr) {
    static const struct {
        int nr;
        const char *name;
    } names[] = {
#ifdef __NR_open
        {__NR_open, "open (for writing)"},
#endif
        {__NR_openat, "openat (for writing)"}, {__NR_execve, "execve"}, {__NR_unlinkat, "unlinkat"},
        {__NR_renameat, "renameat"}, {__NR_renameat2, "renameat2"}, {__NR_mkdirat, "mkdirat"}, {__NR_connect, "connect"},
        {__NR_bind, "bind"}, {__NR_listen, "listen"}, {__NR_sendto, "sendto (to an address)"}, {__NR_sendmsg, "sendmsg"},
        {__NR_ftruncate, "ftruncate"}, {__NR_truncate, "truncate"}, {__NR_fchmod, "fchmod"}, {__NR_fchmodat, "fchmodat"},
        {__NR_flock, "flock"}, {__NR_linkat, "linkat"}, {__NR_symlinkat, "symlinkat"}, {__NR_utimensat, "utimensat"},
#ifdef __NR_unlink
        {__NR_unlink, "unlink"},
#endif
#ifdef __NR_rename
        {__NR_rename, "rename"},
#endif
#ifdef __NR_mkdir
        {__NR_mkdir, "mkdir"},
#endif
#ifdef __NR_rmdir
        {__NR_rmdir, "rmdir"},
#endif
    };
    for (size_t k = 0; k < sizeof names / sizeof names[0]; k++)
        if (names[k].nr == nr)
            return names[k].name;
    return NULL;
}

/* -- a checkpoint holds nothing of the program's ------------------------------------------------- */

/* Shared mappings (a file mapped MAP_SHARED, multiprocessing's shared memory) become private copies
 * of what they hold now: a replay must neither see the recording's later writes nor write through. */
static int privatize_shared_mappings(void) {
    NEED(open);
    NEED(read);
    int fd = real_open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    size_t cap = 1 << 16, len = 0;
    char *text = malloc(cap);
    for (;;) {
        if (text == NULL)
            break;
        if (len + 4096 > cap) {
            char *grown = realloc(text, cap * 2);
            if (grown == NULL)
                break;
            text = grown;
            cap *= 2;
        }
        ssize_t got = real_read(fd, text + len, cap - len - 1);
        if (got <= 0)
            break;
        len += (size_t)got;
    }
    real_close(fd);
    if (text == NULL)
        return -1;
    text[len] = 0;
    int count = 0;
    for (char *line = text; line && *line;) {
        char *end = strchr(line, '\n');
        if (end)
            *end = 0;
        unsigned long start, stop;
        char perms[8] = "";
        if (sscanf(line, "%lx-%lx %7s", &start, &stop, perms) == 3 && perms[3] == 's' && perms[0] == 'r') {
            size_t size = stop - start;
            void *copy = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
            if (copy != MAP_FAILED) {
                /* read it without faulting on pages past a file's end */
                struct iovec local = {copy, size}, remote = {(void *)start, size};
                ssize_t got = process_vm_readv(getpid(), &local, 1, &remote, 1, 0);
                (void)got;
                int prot = (perms[0] == 'r' ? PROT_READ : 0) | (perms[1] == 'w' ? PROT_WRITE : 0) |
                           (perms[2] == 'x' ? PROT_EXEC : 0);
                void *at = mmap((void *)start, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
                if (at != MAP_FAILED) {
                    memcpy(at, copy, size);
                    mprotect(at, size, prot);
                    count++;
                }
                munmap(copy, size);
            }
        }
        line = end ? end + 1 : NULL;
    }
    free(text);
    return count;
}

/* -- the interface the recording child uses (ctypes, or dlsym from the C tracer) --------------- */

EXPORT int nd_journal_version(void) { return VERSION; }

/* Start recording into `fd` (an empty file) from here, in this thread. */
EXPORT int nd_journal_record(int fd) {
    j_fd = fd;
    j_next = j_flushed = 0;
    j_entries = 0;
    j_len = 0;
    g_thread = pthread_self();
    if (gil_held == NULL)
        gil_held = (int (*)(void))dlsym(RTLD_DEFAULT, "PyGILState_Check");
    g_mode = MODE_RECORD;
    return 0;
}

/* Run the program for real, unjournaled, but with the sandbox for what the debugger runs (a full
 * capture's reprs). */
EXPORT void nd_journal_live(void) {
    g_thread = pthread_self();
    g_mode = MODE_LIVE;
}

/* The whole run in the sandbox (the language server's runs, a re-run of a failing test); it may
 * change files under `scratch` (NULL: nowhere). */
EXPORT void nd_journal_sandbox(const char *scratch) {
    g_scratch_len = 0;
    if (scratch != NULL && scratch[0] == '/' && strlen(scratch) < sizeof g_scratch) {
        snprintf(g_scratch, sizeof g_scratch, "%s", scratch);
        g_scratch_len = strlen(g_scratch);
        while (g_scratch_len > 1 && g_scratch[g_scratch_len - 1] == '/')
            g_scratch[--g_scratch_len] = 0;
    }
    g_thread = pthread_self();
    g_mode = MODE_SANDBOX;
}

/* This process is a replay: from here on, answer from the journal at the position inherited from
 * the checkpoint it was forked from. `fd`: the journal, readable. */
/* A replay answers the program's descriptors with the recording's numbers, which the replay's own
 * (this one) may have too: a file object of the program's that the recorder's work lets go (a
 * repr's traceback) closes its number for real. The journal is read through a number far above
 * the program's. */
#define JOURNAL_FD_FLOOR 900

EXPORT int nd_journal_replay(int fd) {
    if (fd >= 0) {
        NEED(fcntl);
        int high = real_fcntl(fd, F_DUPFD_CLOEXEC, JOURNAL_FD_FLOOR);
        j_fd = high >= 0 ? high : fd;
    }
    j_len = 0;
    r_head = r_count = 0;
    r_cache_at = UINT64_MAX;
    r_cache_len = 0;
    g_thread = pthread_self();
    if (gil_held == NULL)
        gil_held = (int (*)(void))dlsym(RTLD_DEFAULT, "PyGILState_Check");
    if (save_thread == NULL || restore_thread == NULL) {
        save_thread = (void *(*)(void))dlsym(RTLD_DEFAULT, "PyEval_SaveThread");
        restore_thread = (void (*)(void *))dlsym(RTLD_DEFAULT, "PyEval_RestoreThread");
    }
    g_mode = MODE_REPLAY;
    return 0;
}

/* The calling thread is the program's thread `number` (> 0; numbered as the program started it):
 * its calls are journaled and replayed as the main thread's are, each thread's on its own. */
EXPORT void nd_journal_thread(int number) {
    if (number > 0) {
        t_number = number;
        g_threads = 1;
    }
}

EXPORT void nd_journal_off(void) { g_mode = MODE_OFF; }
EXPORT int nd_journal_mode(void) { return g_mode; }

/* The calling thread's context: returns the one it replaces. */
EXPORT int nd_journal_enter(int ctx) {
    int previous = t_ctx;
    t_ctx = ctx;
    return previous;
}
EXPORT void nd_journal_leave(int previous) { t_ctx = previous; }

EXPORT int nd_journal_flush(void) {
    if (g_mode != MODE_RECORD && j_len == 0)
        return 0;
    pthread_mutex_lock(&j_lock);
    int rc = flush_locked();
    pthread_mutex_unlock(&j_lock);
    return rc;
}

EXPORT unsigned long long nd_journal_entries(void) { return j_entries; }

/* The bytes written to the journal's file so far (all of them whole entries). */
EXPORT unsigned long long nd_journal_flushed(void) {
    pthread_mutex_lock(&j_lock);
    unsigned long long flushed = j_flushed;
    pthread_mutex_unlock(&j_lock);
    return flushed;
}

/* A replay reads no further than `bytes` of the journal (a live recording's, as its stop wrote it). */
EXPORT void nd_journal_replay_limit(unsigned long long bytes) { r_limit = bytes; }
EXPORT unsigned long long nd_journal_bytes(void) { return j_next; }
EXPORT void nd_journal_set_counter(const long long *counter) { g_counter = counter; }

/* ND_JOURNAL_TRACE=1: a line of the C tracer's into the same trace (its gate's takes, say). */
EXPORT void nd_journal_trace_line(const char *line) {
    if (!g_trace || line == NULL)
        return;
    NEED(write);
    real_write(g_trace_fd, line, strnlen(line, 400));
}
EXPORT void nd_journal_set_takes(const long long *takes, const volatile int *given_up) {
    g_takes = takes;
    g_given_up = given_up;
}

/* Where a replay stopped being one: -2 none; else the event count then (-1 unknown). The reason is
 * written into `why`. */
EXPORT long long nd_journal_divergence(char *why, size_t n) {
    if (!g_diverged)
        return -2;
    if (why && n) {
        if (g_why[0])
            snprintf(why, n, "%s", g_why);
        else if (g_net_refused_nr >= 0) {
            const char *name = syscall_name(g_net_refused_nr);
            if (name)
                snprintf(why, n, "the replay made a system call the journal did not serve (%s): refused", name);
            else
                snprintf(why, n, "the replay made a system call the journal did not serve (number %d): refused",
                         g_net_refused_nr);
        } else
            snprintf(why, n, "the replay diverged");
    }
    return g_diverged_event;
}

/* What the sandbox refused: the count, the first one in `first`. */
EXPORT unsigned long long nd_journal_refusals(char *first, size_t n) {
    if (first && n)
        snprintf(first, n, "%s", g_refused_first);
    return g_refused;
}
EXPORT void nd_journal_clear_refusals(void) {
    g_refused = 0;
    g_refused_first[0] = 0;
}

/* A checkpoint: every descriptor but `keep` becomes /dev/null (the program's resources are let go), and its shared
 * mappings private. Returns how many mappings were copied, or -1. */
EXPORT int nd_journal_checkpoint(const int *keep, int n_keep) {
    NEED(open);
    NEED(close);
    NEED(dup2);
    int null_fd = real_open("/dev/null", O_RDWR | O_CLOEXEC);
    DIR *dir = NULL;
    NEED(opendir);
    NEED(readdir64);
    NEED(closedir);
    NEED(dirfd);
    dir = real_opendir("/proc/self/fd");
    if (dir != NULL) {
        int own_fd = real_dirfd(dir);
        int fds[4096];
        int n = 0;
        struct dirent64 *entry;
        while ((entry = real_readdir64(dir)) != NULL && n < 4096) {
            if (entry->d_name[0] < '0' || entry->d_name[0] > '9')
                continue;
            int fd = atoi(entry->d_name);
            if (fd == own_fd || fd == null_fd)
                continue;
            int kept = 0;
            for (int k = 0; k < n_keep; k++)
                kept |= keep[k] == fd;
            kept |= g_trace && fd == g_trace_fd; /* (the trace file stays open) */
            if (!kept)
                fds[n++] = fd;
        }
        real_closedir(dir);
        /* each becomes /dev/null rather than closed: the program's objects still name these
         * numbers, and one finalized later must not close a descriptor the checkpoint opened since */
        for (int k = 0; k < n; k++) {
            if (null_fd < 0 || real_dup2(null_fd, fds[k]) < 0)
                real_close(fds[k]);
        }
    }
    if (null_fd >= 0)
        real_close(null_fd);
    return privatize_shared_mappings();
}
