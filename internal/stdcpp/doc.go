// Package stdcpp ports the libstdc++ algorithms and random-number machinery
// whose exact behaviour llama.cpp's samplers depend on, step for step, so that
// bankml reproduces the reference's orders and draws bit for bit.
//
// # Design record
//
// What. [Sort] (std::sort: introsort), [PartialSort] (std::partial_sort: heap
// select, then heap sort), [NthElement] (std::nth_element: introselect), the
// heap primitives they share, [MT19937] (std::mt19937), [GenerateCanonical32]
// and [GenerateCanonical64] (std::generate_canonical<float, 24> and
// <double, 53> over a 32-bit engine), and [UniformReal32] / [UniformReal64]
// (std::uniform_real_distribution<float> / <double>::operator()).
//
// Follows. libstdc++'s bits/stl_algo.h, bits/stl_heap.h, bits/random.h and
// bits/random.tcc as shipped with GCC 11 to 13 (identical in these versions
// for everything here). The reference's libllama.v0.5.0.so was built with
// GCC 11.4 (its .comment section says so); its sampler code instantiates
// these templates, and the oracle tests compare against functions compiled by
// the local g++ and against libllama itself (package sample).
//
// Why ports and not Go's sort or math/rand: std::sort and std::partial_sort
// are not stable, and llama.cpp's samplers keep "the first" of equal logits,
// so which of two equal candidates survives is an artefact of the algorithm;
// the random draws are defined by the engine and the distribution's exact
// floating-point steps.
//
// Deliberate differences. None in results for a strict weak ordering. Where
// libstdc++ relies on the ordering to stay in bounds (the unguarded
// insertion loops of std::sort), these ports stop at the range's start, so a
// comparator that is not a strict weak ordering (NaN keys) cannot make them
// read outside the slice; libstdc++ has undefined behaviour there.
//
// Determinism. Pure functions of their inputs; an [MT19937] holds its own
// state and no package state is mutated after initialisation.
package stdcpp
