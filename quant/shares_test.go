package quant

import (
	"math/rand/v2"
	"sync"
	"testing"
)

// TestSharesHandOutEveryUnitOnce: workers that each walk their own share
// from the front and then take from the backs of the others (walkShares)
// take every unit exactly once, whatever the interleaving.
func TestSharesHandOutEveryUnitOnce(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for trial := range 300 {
		nbands, parts := 1+r.IntN(40), 1+r.IntN(4)
		parts = min(parts, nbands)
		ps := make([]share, parts)
		for i := range ps {
			ps[i].set(nbands*i/parts, nbands*(i+1)/parts)
		}
		taken := make([][]int, parts)
		var wg sync.WaitGroup
		for w := range parts {
			wg.Go(func() {
				walkShares(ps, w, func(b, back int, start bool) {
					if back <= b {
						t.Errorf("trial %d: unit %d taken with back %d", trial, b, back)
					}
					taken[w] = append(taken[w], b)
				})
			})
		}
		wg.Wait()
		seen := make([]int, nbands)
		for _, ts := range taken {
			for _, b := range ts {
				seen[b]++
			}
		}
		for b, n := range seen {
			if n != 1 {
				t.Fatalf("trial %d (%d units, %d shares): unit %d taken %d times", trial, nbands, parts, b, n)
			}
		}
	}
}
