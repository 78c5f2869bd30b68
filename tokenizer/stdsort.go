package tokenizer

// This file holds ports of the libstdc++ algorithms whose tie-breaking llama.cpp's
// tokenizer depends on: std::sort (introsort, not stable: the order of equal elements is
// an artefact of the algorithm) and std::priority_queue (binary heap via push_heap /
// pop_heap). Following them step by step gives the same order as the reference (built with
// GCC 11's libstdc++) for every input, including ties and NaN scores.

// stdSort sorts a like libstdc++'s std::sort(first, last, less).
func stdSort[T any](a []T, less func(x, y T) bool) {
	if len(a) == 0 {
		return
	}
	introsortLoop(a, 0, len(a), 2*floorLog2(len(a)), less)
	finalInsertionSort(a, 0, len(a), less)
}

const sortThreshold = 16 // libstdc++'s _S_threshold

func floorLog2(n int) int {
	k := -1
	for n > 0 {
		n >>= 1
		k++
	}
	return k
}

func introsortLoop[T any](a []T, first, last, depth int, less func(x, y T) bool) {
	for last-first > sortThreshold {
		if depth == 0 {
			// __partial_sort(first, last, last): heap_select then sort_heap.
			makeHeap(a, first, last, less)
			sortHeap(a, first, last, less)
			return
		}
		depth--
		cut := unguardedPartitionPivot(a, first, last, less)
		introsortLoop(a, cut, last, depth, less)
		last = cut
	}
}

func unguardedPartitionPivot[T any](a []T, first, last int, less func(x, y T) bool) int {
	mid := first + (last-first)/2
	moveMedianToFirst(a, first, first+1, mid, last-1, less)
	return unguardedPartition(a, first+1, last, first, less)
}

func moveMedianToFirst[T any](a []T, result, x, y, z int, less func(x, y T) bool) {
	if less(a[x], a[y]) {
		if less(a[y], a[z]) {
			a[result], a[y] = a[y], a[result]
		} else if less(a[x], a[z]) {
			a[result], a[z] = a[z], a[result]
		} else {
			a[result], a[x] = a[x], a[result]
		}
	} else if less(a[x], a[z]) {
		a[result], a[x] = a[x], a[result]
	} else if less(a[y], a[z]) {
		a[result], a[z] = a[z], a[result]
	} else {
		a[result], a[y] = a[y], a[result]
	}
}

func unguardedPartition[T any](a []T, first, last, pivot int, less func(x, y T) bool) int {
	for {
		for less(a[first], a[pivot]) {
			first++
		}
		last--
		for less(a[pivot], a[last]) {
			last--
		}
		if !(first < last) {
			return first
		}
		a[first], a[last] = a[last], a[first]
		first++
	}
}

func finalInsertionSort[T any](a []T, first, last int, less func(x, y T) bool) {
	if last-first > sortThreshold {
		insertionSort(a, first, first+sortThreshold, less)
		for i := first + sortThreshold; i < last; i++ {
			unguardedLinearInsert(a, i, less)
		}
	} else {
		insertionSort(a, first, last, less)
	}
}

func insertionSort[T any](a []T, first, last int, less func(x, y T) bool) {
	if first == last {
		return
	}
	for i := first + 1; i < last; i++ {
		if less(a[i], a[first]) {
			v := a[i]
			copy(a[first+1:i+1], a[first:i])
			a[first] = v
		} else {
			unguardedLinearInsert(a, i, less)
		}
	}
}

func unguardedLinearInsert[T any](a []T, last int, less func(x, y T) bool) {
	v := a[last]
	next := last - 1
	for less(v, a[next]) {
		a[last] = a[next]
		last = next
		next--
	}
	a[last] = v
}

// pushHeapHole is libstdc++'s __push_heap: move v up from hole towards top.
func pushHeapHole[T any](a []T, first, hole, top int, v T, less func(x, y T) bool) {
	parent := (hole - 1) / 2
	for hole > top && less(a[first+parent], v) {
		a[first+hole] = a[first+parent]
		hole = parent
		parent = (hole - 1) / 2
	}
	a[first+hole] = v
}

// adjustHeap is libstdc++'s __adjust_heap over a[first:first+n].
func adjustHeap[T any](a []T, first, hole, n int, v T, less func(x, y T) bool) {
	top := hole
	second := hole
	for second < (n-1)/2 {
		second = 2 * (second + 1)
		if less(a[first+second], a[first+second-1]) {
			second--
		}
		a[first+hole] = a[first+second]
		hole = second
	}
	if n&1 == 0 && second == (n-2)/2 {
		second = 2 * (second + 1)
		a[first+hole] = a[first+second-1]
		hole = second - 1
	}
	pushHeapHole(a, first, hole, top, v, less)
}

// popHeapTo is libstdc++'s __pop_heap(first, last, result).
func popHeapTo[T any](a []T, first, last, result int, less func(x, y T) bool) {
	v := a[result]
	a[result] = a[first]
	adjustHeap(a, first, 0, last-first, v, less)
}

func makeHeap[T any](a []T, first, last int, less func(x, y T) bool) {
	n := last - first
	if n < 2 {
		return
	}
	for parent := (n - 2) / 2; ; parent-- {
		adjustHeap(a, first, parent, n, a[first+parent], less)
		if parent == 0 {
			return
		}
	}
}

func sortHeap[T any](a []T, first, last int, less func(x, y T) bool) {
	for last-first > 1 {
		last--
		popHeapTo(a, first, last, last, less)
	}
}

// stdPQ is std::priority_queue<T, std::vector<T>, Compare>: top is the greatest element
// under less, and equal elements come out in the order libstdc++'s heap gives them.
type stdPQ[T any] struct {
	a    []T
	less func(x, y T) bool
}

func (q *stdPQ[T]) push(v T) {
	q.a = append(q.a, v)
	pushHeapHole(q.a, 0, len(q.a)-1, 0, v, q.less)
}

func (q *stdPQ[T]) pop() T {
	top := q.a[0]
	if n := len(q.a); n > 1 {
		popHeapTo(q.a, 0, n-1, n-1, q.less)
	}
	q.a = q.a[:len(q.a)-1]
	return top
}

func (q *stdPQ[T]) empty() bool { return len(q.a) == 0 }
