package storeserve

import "slices"

// CachedDetails lists the sha256 of the files whose details the router keeps, sorted.
func (r *Router) CachedDetails() []string {
	var out []string
	r.detailsOf.Range(func(k, _ any) bool {
		out = append(out, k.(string))
		return true
	})
	slices.Sort(out)
	return out
}
