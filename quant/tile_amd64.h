// Macros shared by the AVX-512 tiles.

// hsum_float_8 over the eight lane accumulators at acc (8 zmm, lane j at
// 64j): (a0+a4 + a2+a6) + (a1+a5 + a3+a7), stored at dst.
#define HSUM8AT(acc, dst) \
	VMOVUPS 0(acc), Z0 \
	VMOVUPS 64(acc), Z1 \
	VMOVUPS 128(acc), Z2 \
	VMOVUPS 192(acc), Z3 \
	VADDPS  256(acc), Z0, Z0 \
	VADDPS  320(acc), Z1, Z1 \
	VADDPS  384(acc), Z2, Z2 \
	VADDPS  448(acc), Z3, Z3 \
	VADDPS  Z2, Z0, Z0 \
	VADDPS  Z3, Z1, Z1 \
	VADDPS  Z1, Z0, Z0 \
	VMOVUPS Z0, (dst)
