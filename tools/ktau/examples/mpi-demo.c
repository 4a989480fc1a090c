// SPDX-License-Identifier: GPL-2.0
/*
 * mpi-demo: a small MPI program, built with mpicc -finstrument-functions
 * and linked with libktau-runtime, whose ranks each write a profile with
 * the kernel time charged to the routine that incurred it, MPI's too.
 *
 * The MPI calls it makes go through wrappers of its own (MPI's profiling
 * interface: MPI_Send here calls PMPI_Send), which -finstrument-functions
 * times like any other routine of the program and which the runtime names
 * after their symbols, so a rank's profile has for example
 * "main => exchange => MPI_Recv => SCHED" (waiting for the rank before
 * it) next to "main => write_output => write". Each rank, R rounds of:
 *
 *   compute       arithmetic only, (rank + 1) times ITERS iterations: the
 *                 ranks arrive at different times at
 *   exchange      a ring: one MPI_Send of a token to rank + 1 and one
 *                 MPI_Recv from rank - 1 (rank 0 sends first), each rank
 *                 adding its rank to the token
 *   reduce        one MPI_Allreduce (sum) of the token
 *
 * after MPI_Init (its start-up: shared memory, files, sockets), then one
 * MPI_Barrier, then its own file (DIR/ktau-mpi-demo.RANK.PID):
 *
 *   write_output  exactly W write() calls of 4096 bytes and one fsync()
 *   read_back     exactly W pread() calls of 4096 bytes
 *
 * So every rank makes exactly R MPI_Send, R MPI_Recv and R MPI_Allreduce
 * calls, W writes, one fsync and W preads; the program checks the token
 * and the sums and exits 1 when one is wrong.
 *
 *   mpirun -np 4 ktau-mpi-demo [-r R] [-w W] [-c ITERS] [-d DIR] [-q]
 *
 * The profile goes to $KTAU_PROFILE_DIR (default ktau-profile; %r is the
 * rank: KTAU_PROFILE_DIR=prof-%r, then ktaud combine prof-*).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <mpi.h>

#define NOINLINE __attribute__((noinline))
#define BLOCK 4096

static char block[BLOCK];

/*
 * The MPI calls of the program, timed by the hooks (MPI's own functions
 * are not compiled with -finstrument-functions).
 */
NOINLINE int MPI_Init(int *argc, char ***argv)
{
	return PMPI_Init(argc, argv);
}

NOINLINE int MPI_Finalize(void)
{
	return PMPI_Finalize();
}

NOINLINE int MPI_Send(const void *buf, int count, MPI_Datatype type, int dest, int tag,
		      MPI_Comm comm)
{
	return PMPI_Send(buf, count, type, dest, tag, comm);
}

NOINLINE int MPI_Recv(void *buf, int count, MPI_Datatype type, int source, int tag,
		      MPI_Comm comm, MPI_Status *status)
{
	return PMPI_Recv(buf, count, type, source, tag, comm, status);
}

NOINLINE int MPI_Allreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype type,
			   MPI_Op op, MPI_Comm comm)
{
	return PMPI_Allreduce(sendbuf, recvbuf, count, type, op, comm);
}

NOINLINE int MPI_Barrier(MPI_Comm comm)
{
	return PMPI_Barrier(comm);
}

static NOINLINE unsigned long compute(unsigned long iters)
{
	unsigned long x = (unsigned long)iters, i;

	/* Knuth's MMIX LCG, in registers: no memory traffic, no system call */
	for (i = 0; i < iters; i++) {
		x = x * 6364136223846793005ul + 1442695040888963407ul;
		__asm__ volatile("" : "+r"(x));
	}
	return x;
}

/*
 * One turn of the ring: rank 0 sends the token (its round number) and
 * gets it back from the last rank with every rank added; the others
 * receive it, add their rank and pass it on. Returns the token as this
 * rank last saw it, or -1 on an MPI error.
 */
static NOINLINE long exchange(int rank, int size, long round)
{
	MPI_Status *st = MPI_STATUS_IGNORE;
	long token = round;
	int next = (rank + 1) % size, prev = (rank + size - 1) % size;

	if (size == 1)	/* a blocking send to itself could wait forever */
		return token;
	if (rank == 0) {
		if (MPI_Send(&token, 1, MPI_LONG, next, 1, MPI_COMM_WORLD) != MPI_SUCCESS ||
		    MPI_Recv(&token, 1, MPI_LONG, prev, 1, MPI_COMM_WORLD, st) != MPI_SUCCESS)
			return -1;
		return token;
	}
	if (MPI_Recv(&token, 1, MPI_LONG, prev, 1, MPI_COMM_WORLD, st) != MPI_SUCCESS)
		return -1;
	token += rank;
	if (MPI_Send(&token, 1, MPI_LONG, next, 1, MPI_COMM_WORLD) != MPI_SUCCESS)
		return -1;
	return token;
}

static NOINLINE long reduce(long value)
{
	long sum = 0;

	if (MPI_Allreduce(&value, &sum, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD) != MPI_SUCCESS)
		return -1;
	return sum;
}

static NOINLINE int write_output(int fd, long n)
{
	long i;

	for (i = 0; i < n; i++)
		if (write(fd, block, sizeof(block)) != (ssize_t)sizeof(block))
			return -1;
	return fsync(fd);
}

static NOINLINE long read_back(int fd, long n)
{
	char buf[BLOCK];
	long i, total = 0;
	ssize_t r;

	for (i = 0; i < n; i++) {
		r = pread(fd, buf, sizeof(buf), (off_t)i * BLOCK);
		if (r != (ssize_t)sizeof(buf) || memcmp(buf, block, sizeof(buf)))
			return -1;
		total += r;
	}
	return total;
}

static void usage(FILE *f)
{
	fprintf(f,
"Usage: mpirun -np N ktau-mpi-demo [options]\n\n"
"Each rank computes, passes a token around a ring (MPI_Send, MPI_Recv),\n"
"sums it over all ranks (MPI_Allreduce), then writes and reads back a file\n"
"of its own, with libktau's -finstrument-functions timers and MPI calls\n"
"timed through wrappers. On a KTAU kernel the kernel time of each rank is\n"
"charged to its routines; the TAU profile ($KTAU_PROFILE_DIR, %%r the rank)\n"
"is written at exit.\n\n"
"  -r R       rounds of compute, exchange and reduce (default 8)\n"
"  -w W       write() and pread() calls of 4096 bytes (default 16)\n"
"  -c ITERS   iterations of compute per round, times rank + 1 (default 200000)\n"
"  -d DIR     directory of the ranks' files (default /tmp)\n"
"  -q         quiet\n");
}

int main(int argc, char **argv)
{
	unsigned long iters = 200000;
	long rounds = 8, writes = 16, round, token, sum, want;
	int c, rank, size, fd, quiet = 0, ret = 0;
	const char *dir = "/tmp";
	char path[4096];

	if (MPI_Init(&argc, &argv) != MPI_SUCCESS) {
		fprintf(stderr, "ktau-mpi-demo: MPI_Init failed\n");
		return 1;
	}
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	while ((c = getopt(argc, argv, "r:w:c:d:qh")) != -1) {
		switch (c) {
		case 'r': rounds = atol(optarg); break;
		case 'w': writes = atol(optarg); break;
		case 'c': iters = strtoul(optarg, NULL, 10); break;
		case 'd': dir = optarg; break;
		case 'q': quiet = 1; break;
		case 'h': usage(stdout); MPI_Finalize(); return 0;
		default: usage(stderr); MPI_Finalize(); return 2;
		}
	}
	if (optind < argc || rounds < 1 || writes < 0) {
		if (rank == 0)
			usage(stderr);
		MPI_Finalize();
		return 2;
	}
	memset(block, 'a' + rank % 26, sizeof(block));

	/*
	 * The token comes back to rank 0 as round + 1 + 2 + ... + size - 1;
	 * rank r sees round + 1 + ... + r; the sum is the same on all ranks.
	 */
	for (round = 0; round < rounds; round++) {
		compute(iters * (unsigned long)(rank + 1));
		token = exchange(rank, size, round);
		want = round + (rank ? (long)rank * (rank + 1) / 2 : (long)size * (size - 1) / 2);
		if (token != want) {
			fprintf(stderr, "ktau-mpi-demo: rank %d, round %ld: token %ld, not %ld\n",
				rank, round, token, want);
			ret = 1;
		}
		sum = reduce(token);
		want = (long)size * round + (long)size * (size - 1) / 2 +
			(long)(size - 1) * size * (size + 1) / 6;
		if (sum != want) {
			fprintf(stderr, "ktau-mpi-demo: rank %d, round %ld: sum %ld, not %ld\n",
				rank, round, sum, want);
			ret = 1;
		}
	}
	if (MPI_Barrier(MPI_COMM_WORLD) != MPI_SUCCESS)
		ret = 1;

	snprintf(path, sizeof(path), "%s/ktau-mpi-demo.%d.%d", dir, rank, (int)getpid());
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0) {
		fprintf(stderr, "ktau-mpi-demo: rank %d: %s: %s\n", rank, path, strerror(errno));
		ret = 1;
	} else {
		if (write_output(fd, writes) || read_back(fd, writes) != writes * BLOCK) {
			fprintf(stderr, "ktau-mpi-demo: rank %d: %s: write or read back failed\n",
				rank, path);
			ret = 1;
		}
		close(fd);
		unlink(path);
	}
	if (!quiet)
		printf("mpi-demo: rank %d of %d: %ld rounds, %ld writes%s\n", rank, size, rounds,
		       writes, ret ? ", FAILED" : "");
	MPI_Finalize();
	return ret;
}
