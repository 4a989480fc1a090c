// SPDX-License-Identifier: GPL-2.0
/*
 * ktau-cxx-demo: a C++ program timed by libktau's -finstrument-functions
 * hooks, whose routines must come out with the names people read
 * ("demo::Grid::step(int)", "double demo::sum<double>(std::vector<double,
 * std::allocator<double> > const&)"), not as the symbols the compiler
 * wrote (_ZN4demo4Grid4stepEi).
 *
 *   ktau-cxx-demo [-o DIR] [-n STEPS]
 */
#include <cstdio>
#include <cstdlib>
#include <unistd.h>
#include <vector>

#include "libktau.h"

namespace demo {

template <typename T>
T sum(const std::vector<T> &v)
{
	T s = 0;

	for (const T &x : v)
		s += x;
	return s;
}

class Grid {
public:
	explicit Grid(int n) : cells(n, 1.0) {}
	void step(int k)
	{
		for (auto &c : cells)
			c = c * 0.5 + k;
	}
	double total() const { return sum(cells); }

private:
	std::vector<double> cells;
};

} // namespace demo

int main(int argc, char **argv)
{
	const char *dir = nullptr;
	int c, steps = 10;

	while ((c = getopt(argc, argv, "o:n:")) != -1) {
		switch (c) {
		case 'o': dir = optarg; break;
		case 'n': steps = atoi(optarg); break;
		default:
			fprintf(stderr, "usage: ktau-cxx-demo [-o DIR] [-n STEPS]\n");
			return 2;
		}
	}
	if (dir && ktau_user_output(dir)) {
		fprintf(stderr, "ktau-cxx-demo: out of memory\n");
		return 1;
	}
	ktau_user_init();
	demo::Grid g(1000);
	for (int i = 0; i < steps; i++)
		g.step(i);
	printf("%g\n", g.total());
	return 0;
}
