package stdcpp

// sThreshold is libstdc++'s _S_threshold: introsort stops partitioning ranges
// of this many elements or fewer and leaves them to the final insertion sort.
const sThreshold = 16

// Sort sorts s as std::sort(first, last, less) does in libstdc++: introsort
// (median-of-three quicksort with a depth limit of 2*floor(log2(n)), heap sort
// past it) over ranges longer than 16 elements, then one insertion sort. It is
// not stable; equal elements end in the order this exact sequence of moves
// leaves them. less must be a strict weak ordering for a sorted result (see
// the package doc for what happens otherwise).
func Sort[T any](s []T, less func(a, b T) bool) {
	if len(s) < 2 {
		return
	}
	introsortLoop(s, 0, len(s), 2*lg(len(s)), less)
	finalInsertionSort(s, 0, len(s), less)
}

// PartialSort rearranges s as std::partial_sort(first, first+middle, last,
// less) does in libstdc++ (__heap_select, then __sort_heap): s[:middle] holds
// the middle smallest elements in order, s[middle:] the rest in the order the
// heap selection leaves them. middle must be in [0, len(s)].
func PartialSort[T any](s []T, middle int, less func(a, b T) bool) {
	heapSelect(s, 0, middle, len(s), less)
	sortHeap(s, 0, middle, less)
}

// NthElement rearranges s as std::nth_element(first, first+nth, last, less)
// does in libstdc++ (introselect with a depth limit of 2*floor(log2(n)), heap
// selection past it, insertion sort for ranges of 3 or fewer): s[nth] is the
// element a full sort would put there, nothing before it is greater and
// nothing after it is less. nth outside [0, len(s)) leaves s unchanged, as
// nth == last does in C++.
func NthElement[T any](s []T, nth int, less func(a, b T) bool) {
	if len(s) == 0 || nth < 0 || nth >= len(s) {
		return
	}
	first, last := 0, len(s)
	depth := 2 * lg(len(s))
	for last-first > 3 {
		if depth == 0 {
			heapSelect(s, first, nth+1, last, less)
			s[first], s[nth] = s[nth], s[first]
			return
		}
		depth--
		cut := unguardedPartitionPivot(s, first, last, less)
		if cut <= nth {
			first = cut
		} else {
			last = cut
		}
	}
	insertionSort(s, first, last, less)
}

// lg is std::__lg: floor(log2(n)) for n > 0.
func lg(n int) int {
	k := -1
	for n > 0 {
		n >>= 1
		k++
	}
	return k
}

// introsortLoop is std::__introsort_loop over s[first:last].
func introsortLoop[T any](s []T, first, last, depth int, less func(a, b T) bool) {
	for last-first > sThreshold {
		if depth == 0 {
			// std::__partial_sort(first, last, last): a heap sort.
			heapSelect(s, first, last, last, less)
			sortHeap(s, first, last, less)
			return
		}
		depth--
		cut := unguardedPartitionPivot(s, first, last, less)
		introsortLoop(s, cut, last, depth, less)
		last = cut
	}
}

// unguardedPartitionPivot is std::__unguarded_partition_pivot: the median of
// s[first+1], s[mid] and s[last-1] moves to s[first] and becomes the pivot.
func unguardedPartitionPivot[T any](s []T, first, last int, less func(a, b T) bool) int {
	mid := first + (last-first)/2
	moveMedianToFirst(s, first, first+1, mid, last-1, less)
	return unguardedPartition(s, first+1, last, first, less)
}

// moveMedianToFirst is std::__move_median_to_first: swaps the median of
// s[a], s[b], s[c] into s[result].
func moveMedianToFirst[T any](s []T, result, a, b, c int, less func(a, b T) bool) {
	var m int
	switch {
	case less(s[a], s[b]):
		switch {
		case less(s[b], s[c]):
			m = b
		case less(s[a], s[c]):
			m = c
		default:
			m = a
		}
	case less(s[a], s[c]):
		m = a
	case less(s[b], s[c]):
		m = c
	default:
		m = b
	}
	s[result], s[m] = s[m], s[result]
}

// unguardedPartition is std::__unguarded_partition of s[first:last] around
// s[pivot]. The pivot is a sentinel for both scans (less(x, x) is false), so
// the bounds checks below never change the result; they only keep a
// comparator that is not a strict weak ordering inside the slice.
func unguardedPartition[T any](s []T, first, last, pivot int, less func(a, b T) bool) int {
	for {
		for first < len(s)-1 && less(s[first], s[pivot]) {
			first++
		}
		last--
		for last > 0 && less(s[pivot], s[last]) {
			last--
		}
		if !(first < last) {
			return first
		}
		s[first], s[last] = s[last], s[first]
		first++
	}
}

// finalInsertionSort is std::__final_insertion_sort.
func finalInsertionSort[T any](s []T, first, last int, less func(a, b T) bool) {
	if last-first > sThreshold {
		insertionSort(s, first, first+sThreshold, less)
		for i := first + sThreshold; i < last; i++ {
			unguardedLinearInsert(s, first, i, less)
		}
		return
	}
	insertionSort(s, first, last, less)
}

// insertionSort is std::__insertion_sort over s[first:last].
func insertionSort[T any](s []T, first, last int, less func(a, b T) bool) {
	if first == last {
		return
	}
	for i := first + 1; i < last; i++ {
		if less(s[i], s[first]) {
			v := s[i]
			copy(s[first+1:i+1], s[first:i]) // std::move_backward
			s[first] = v
		} else {
			unguardedLinearInsert(s, first, i, less)
		}
	}
}

// unguardedLinearInsert is std::__unguarded_linear_insert: moves s[last]
// down past the greater elements before it. libstdc++ relies on an element
// not greater than it somewhere before; floor only keeps a comparator that is
// not a strict weak ordering inside the slice.
func unguardedLinearInsert[T any](s []T, floor, last int, less func(a, b T) bool) {
	v := s[last]
	next := last - 1
	for next >= floor && less(v, s[next]) {
		s[last] = s[next]
		last = next
		next--
	}
	s[last] = v
}

// pushHeap is std::__push_heap over the heap at s[first:]: moves v up from
// hole towards top.
func pushHeap[T any](s []T, first, hole, top int, v T, less func(a, b T) bool) {
	parent := (hole - 1) / 2
	for hole > top && less(s[first+parent], v) {
		s[first+hole] = s[first+parent]
		hole = parent
		parent = (hole - 1) / 2
	}
	s[first+hole] = v
}

// adjustHeap is std::__adjust_heap over s[first:first+n]: sifts the hole at
// hole down to a leaf, then pushes v up from there.
func adjustHeap[T any](s []T, first, hole, n int, v T, less func(a, b T) bool) {
	top := hole
	child := hole
	for child < (n-1)/2 {
		child = 2 * (child + 1)
		if less(s[first+child], s[first+child-1]) {
			child--
		}
		s[first+hole] = s[first+child]
		hole = child
	}
	if n&1 == 0 && child == (n-2)/2 {
		child = 2 * (child + 1)
		s[first+hole] = s[first+child-1]
		hole = child - 1
	}
	pushHeap(s, first, hole, top, v, less)
}

// makeHeap is std::__make_heap over s[first:last].
func makeHeap[T any](s []T, first, last int, less func(a, b T) bool) {
	n := last - first
	if n < 2 {
		return
	}
	for parent := (n - 2) / 2; ; parent-- {
		adjustHeap(s, first, parent, n, s[first+parent], less)
		if parent == 0 {
			return
		}
	}
}

// popHeap is std::__pop_heap(first, last, result): the heap's top goes to
// s[result] and s[result]'s old value is sifted into the heap s[first:last].
func popHeap[T any](s []T, first, last, result int, less func(a, b T) bool) {
	v := s[result]
	s[result] = s[first]
	adjustHeap(s, first, 0, last-first, v, less)
}

// heapSelect is std::__heap_select: a max-heap of s[first:middle], then every
// later element smaller than the heap's top replaces it.
func heapSelect[T any](s []T, first, middle, last int, less func(a, b T) bool) {
	makeHeap(s, first, middle, less)
	for i := middle; i < last; i++ {
		if less(s[i], s[first]) {
			popHeap(s, first, middle, i, less)
		}
	}
}

// sortHeap is std::__sort_heap over the heap s[first:last].
func sortHeap[T any](s []T, first, last int, less func(a, b T) bool) {
	for last-first > 1 {
		last--
		popHeap(s, first, last, last, less)
	}
}

// PriorityQueue is std::priority_queue<T, std::vector<T>, Compare> with Compare = less: Pop returns the greatest
// element under less, and equal elements come out in the order libstdc++'s push_heap / pop_heap leave them
// (llama.cpp's SentencePiece and BPE sessions depend on that order for merge ties). The zero value needs Less set.
type PriorityQueue[T any] struct {
	a    []T
	Less func(a, b T) bool
}

// Push is priority_queue::push: append, then std::push_heap.
func (q *PriorityQueue[T]) Push(v T) {
	q.a = append(q.a, v)
	pushHeap(q.a, 0, len(q.a)-1, 0, v, q.Less)
}

// Pop is priority_queue::top followed by pop (std::pop_heap, then the last element removed). It panics on an
// empty queue, as top() on an empty std::priority_queue is undefined.
func (q *PriorityQueue[T]) Pop() T {
	top := q.a[0]
	if n := len(q.a); n > 1 {
		popHeap(q.a, 0, n-1, n-1, q.Less)
	}
	q.a = q.a[:len(q.a)-1]
	return top
}

// Empty reports whether the queue holds no element.
func (q *PriorityQueue[T]) Empty() bool { return len(q.a) == 0 }

// Len is the number of elements held.
func (q *PriorityQueue[T]) Len() int { return len(q.a) }
