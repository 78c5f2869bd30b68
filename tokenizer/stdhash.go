package tokenizer

// This file reproduces the iteration order of the reference's token_to_id map, a
// std::unordered_map<std::string, llama_token> filled by inserting the tokens in id order.
// llama.cpp walks that map to find its EOT, EOM and FIM tokens by text and keeps the first
// match, so when a vocabulary holds several candidate texts (Phi-3 has both "<|endoftext|>"
// and "<|end|>") the choice depends on this order. The order follows from libstdc++'s
// std::hash<std::string> (_Hash_bytes, MurmurHash2 for 64-bit size_t, seed 0xc70f6907), its
// prime rehash policy (max load factor 1, growth factor 2) and its node insertion rules:
// a node goes first in its bucket, and a node opening an empty bucket goes first in the
// whole list.

// stdStringHash is std::hash<std::string> of libstdc++ on a 64-bit target.
func stdStringHash(s string) uint64 {
	const mul = 0xc6a4a7935bd1e995
	const seed = 0xc70f6907
	shiftMix := func(v uint64) uint64 { return v ^ (v >> 47) }
	n := len(s)
	h := uint64(seed) ^ (uint64(n) * mul)
	aligned := n &^ 7
	for p := 0; p < aligned; p += 8 {
		var d uint64
		for k := 7; k >= 0; k-- {
			d = d<<8 | uint64(s[p+k])
		}
		h ^= shiftMix(d*mul) * mul
		h *= mul
	}
	if n&7 != 0 {
		var d uint64
		for k := n - 1; k >= aligned; k-- {
			d = d<<8 | uint64(s[k])
		}
		h ^= d
		h *= mul
	}
	h = shiftMix(h) * mul
	return shiftMix(h)
}

// stdPrimes is the head of libstdc++'s std::__detail::__prime_list (the primes below 2^34;
// the full list runs to 2^64).
var stdPrimes = [...]uint64{
	2, 3, 5, 7, 11, 13, 17, 19,
	23, 29, 31, 37, 41, 43, 47, 53,
	59, 61, 67, 71, 73, 79, 83, 89,
	97, 103, 109, 113, 127, 137, 139, 149,
	157, 167, 179, 193, 199, 211, 227, 241,
	257, 277, 293, 313, 337, 359, 383, 409,
	439, 467, 503, 541, 577, 619, 661, 709,
	761, 823, 887, 953, 1031, 1109, 1193, 1289,
	1381, 1493, 1613, 1741, 1879, 2029, 2179, 2357,
	2549, 2753, 2971, 3209, 3469, 3739, 4027, 4349,
	4703, 5087, 5503, 5953, 6427, 6949, 7517, 8123,
	8783, 9497, 10273, 11113, 12011, 12983, 14033, 15173,
	16411, 17749, 19183, 20753, 22447, 24281, 26267, 28411,
	30727, 33223, 35933, 38873, 42043, 45481, 49201, 53201,
	57557, 62233, 67307, 72817, 78779, 85229, 92203, 99733,
	107897, 116731, 126271, 136607, 147793, 159871, 172933, 187091,
	202409, 218971, 236897, 256279, 277261, 299951, 324503, 351061,
	379787, 410857, 444487, 480881, 520241, 562841, 608903, 658753,
	712697, 771049, 834181, 902483, 976369, 1056323, 1142821, 1236397,
	1337629, 1447153, 1565659, 1693859, 1832561, 1982627, 2144977, 2320627,
	2510653, 2716249, 2938679, 3179303, 3439651, 3721303, 4026031, 4355707,
	4712381, 5098259, 5515729, 5967347, 6456007, 6984629, 7556579, 8175383,
	8844859, 9569143, 10352717, 11200489, 12117689, 13109983, 14183539, 15345007,
	16601593, 17961079, 19431899, 21023161, 22744717, 24607243, 26622317, 28802401,
	31160981, 33712729, 36473443, 39460231, 42691603, 46187573, 49969847, 54061849,
	58488943, 63278561, 68460391, 74066549, 80131819, 86693767, 93793069, 101473717,
	109783337, 118773397, 128499677, 139022417, 150406843, 162723577, 176048909, 190465427,
	206062531, 222936881, 241193053, 260944219, 282312799, 305431229, 330442829, 357502601,
	386778277, 418451333, 452718089, 489790921, 529899637, 573292817, 620239453, 671030513,
	725980837, 785430967, 849749479, 919334987, 994618837, 1076067617, 1164186217, 1259520799,
	1362662261, 1474249943, 1594975441, 1725587117, 1866894511, 2019773507, 2185171673, 2364114217,
	2557710269, 2767159799, 2993761039, 3238918481, 3504151727, 3791104843, 4101556399, 4294967291,
	6442450933, 8589934583, 12884901857, 17179869143,
}

// stdRehashPolicy is std::__detail::_Prime_rehash_policy with max_load_factor 1.
type stdRehashPolicy struct{ nextResize uint64 }

var stdFastBkt = [...]uint64{2, 2, 2, 3, 5, 5, 7, 7, 11, 11, 11, 11, 13, 13}

func (p *stdRehashPolicy) nextBkt(n uint64) uint64 {
	if n < uint64(len(stdFastBkt)) {
		if n == 0 {
			return 1
		}
		p.nextResize = stdFastBkt[n]
		return stdFastBkt[n]
	}
	for _, q := range stdPrimes[6:] {
		if q >= n {
			p.nextResize = q
			return q
		}
	}
	p.nextResize = ^uint64(0)
	return stdPrimes[len(stdPrimes)-1]
}

func (p *stdRehashPolicy) needRehash(nBkt, nElt, nIns uint64) (bool, uint64) {
	if nElt+nIns <= p.nextResize {
		return false, 0
	}
	minBkts := nElt + nIns
	if p.nextResize == 0 {
		minBkts = max(minBkts, 11)
	}
	if minBkts >= nBkt {
		return true, p.nextBkt(max(minBkts+1, nBkt*2))
	}
	p.nextResize = nBkt
	return false, 0
}

// stdMapOrder returns the keys' indices in the order a libstdc++ std::unordered_map gives
// them after the distinct keys were inserted one by one in index order.
func stdMapOrder(keys []string) []int32 {
	const null, beforeBegin = -1, -2
	n := len(keys)
	code := make([]uint64, n)
	next := make([]int32, n)
	head := int32(null)
	nBkt := uint64(1)
	buckets := []int32{null}
	var policy stdRehashPolicy
	// after returns the node after prev (a node, or beforeBegin for the list head).
	after := func(prev int32) int32 {
		if prev == beforeBegin {
			return head
		}
		return next[prev]
	}
	setAfter := func(prev, node int32) {
		if prev == beforeBegin {
			head = node
		} else {
			next[prev] = node
		}
	}
	for i, k := range keys {
		code[i] = stdStringHash(k)
		if ok, m := policy.needRehash(nBkt, uint64(i), 1); ok {
			nb := make([]int32, m)
			for j := range nb {
				nb[j] = null
			}
			p := head
			head = null
			bbeginBkt := uint64(0)
			for p != null {
				pn := next[p]
				b := code[p] % m
				if nb[b] == null {
					next[p] = head
					head = p
					nb[b] = beforeBegin
					if next[p] != null {
						nb[bbeginBkt] = p
					}
					bbeginBkt = b
				} else {
					next[p] = after(nb[b])
					setAfter(nb[b], p)
				}
				p = pn
			}
			buckets, nBkt = nb, m
		}
		b := code[i] % nBkt
		node := int32(i)
		if prev := buckets[b]; prev != null {
			next[node] = after(prev)
			setAfter(prev, node)
		} else {
			next[node] = head
			head = node
			if next[node] != null {
				buckets[code[next[node]]%nBkt] = node
			}
			buckets[b] = beforeBegin
		}
	}
	order := make([]int32, 0, n)
	for p := head; p != null; p = next[p] {
		order = append(order, p)
	}
	return order
}
