(set-logic ALL)
; benchmark generated from python API
(set-info :status unknown)
(declare-fun x0 () (_ BitVec 8))
(declare-fun x1 () (_ BitVec 8))
(declare-fun x10 () (_ BitVec 8))
(declare-fun x11 () (_ BitVec 8))
(declare-fun x12 () (_ BitVec 8))
(declare-fun x13 () (_ BitVec 8))
(declare-fun x14 () (_ BitVec 8))
(declare-fun x15 () (_ BitVec 8))
(declare-fun x16 () (_ BitVec 8))
(declare-fun x17 () (_ BitVec 8))
(declare-fun x18 () (_ BitVec 8))
(declare-fun x19 () (_ BitVec 8))
(declare-fun x2 () (_ BitVec 8))
(declare-fun x20 () (_ BitVec 8))
(declare-fun x21 () (_ BitVec 8))
(declare-fun x22 () (_ BitVec 8))
(declare-fun x23 () (_ BitVec 8))
(declare-fun x24 () (_ BitVec 8))
(declare-fun x25 () (_ BitVec 8))
(declare-fun x26 () (_ BitVec 8))
(declare-fun x27 () (_ BitVec 8))
(declare-fun x28 () (_ BitVec 8))
(declare-fun x29 () (_ BitVec 8))
(declare-fun x3 () (_ BitVec 8))
(declare-fun x30 () (_ BitVec 8))
(declare-fun x31 () (_ BitVec 8))
(declare-fun x4 () (_ BitVec 8))
(declare-fun x5 () (_ BitVec 8))
(declare-fun x6 () (_ BitVec 8))
(declare-fun x7 () (_ BitVec 8))
(declare-fun x8 () (_ BitVec 8))
(declare-fun x9 () (_ BitVec 8))
(assert
 (not (or false false)))
(assert
 (not (or false false)))
(assert
 (not (or false false)))
(assert
 (not (or false false)))
(assert
 (not (or false false)))
(assert
 (not (or false false)))
(assert
 (not (or false false)))
(assert
 (not (or false false)))
(assert
 (not (or false false)))
(assert
 (not (or false false)))
(assert
 (not (or false false)))
(assert
 (not (or false false)))
(assert
 (not (or false false)))
(assert
 (not (or false false)))
(assert
 (not (or false false)))
(assert
 (not (or false false)))
(assert
 (not (or false false)))
(assert
 (not (or false false)))
(assert
 (not (or false false)))
(assert
 (not (or false false)))
(assert
 (not (or false false)))
(assert
 (not (or false false)))
(assert
 (not (or false false)))
(assert
 (not (or false false)))
(assert
 (not (or false false)))
(assert
 (not (or false false)))
(assert
 (not (or false false)))
(assert
 (not (or false false)))
(assert
 (not (or false false)))
(assert
 (not (or false false)))
(assert
 (not (or false false)))
(assert
 (not (or false false)))
(assert
 (let (($x277 (and (= (_ bv0 2) ((_ extract 2 1) ((_ extract 3 0) x31))) (= (_ bv0 1) ((_ extract 0 0) ((_ extract 3 0) x31))))))
(let (($x270 (and (= (_ bv0 2) ((_ extract 2 1) ((_ extract 3 0) x15))) (= (_ bv0 1) ((_ extract 0 0) ((_ extract 3 0) x15))))))
(let (($x278 (or $x270 $x277)))
(let (($x261 (and (= (_ bv0 2) ((_ extract 2 1) ((_ extract 3 0) x30))) (= (_ bv0 1) ((_ extract 0 0) ((_ extract 3 0) x30))))))
(let (($x254 (and (= (_ bv0 2) ((_ extract 2 1) ((_ extract 3 0) x14))) (= (_ bv0 1) ((_ extract 0 0) ((_ extract 3 0) x14))))))
(let (($x262 (or $x254 $x261)))
(let (($x245 (and (= (_ bv0 2) ((_ extract 2 1) ((_ extract 3 0) x29))) (= (_ bv0 1) ((_ extract 0 0) ((_ extract 3 0) x29))))))
(let (($x238 (and (= (_ bv0 2) ((_ extract 2 1) ((_ extract 3 0) x13))) (= (_ bv0 1) ((_ extract 0 0) ((_ extract 3 0) x13))))))
(let (($x246 (or $x238 $x245)))
(let (($x229 (and (= (_ bv0 2) ((_ extract 2 1) ((_ extract 3 0) x28))) (= (_ bv0 1) ((_ extract 0 0) ((_ extract 3 0) x28))))))
(let (($x222 (and (= (_ bv0 2) ((_ extract 2 1) ((_ extract 3 0) x12))) (= (_ bv0 1) ((_ extract 0 0) ((_ extract 3 0) x12))))))
(let (($x230 (or $x222 $x229)))
(let (($x213 (and (= (_ bv0 2) ((_ extract 2 1) ((_ extract 3 0) x27))) (= (_ bv0 1) ((_ extract 0 0) ((_ extract 3 0) x27))))))
(let (($x206 (and (= (_ bv0 2) ((_ extract 2 1) ((_ extract 3 0) x11))) (= (_ bv0 1) ((_ extract 0 0) ((_ extract 3 0) x11))))))
(let (($x214 (or $x206 $x213)))
(let (($x197 (and (= (_ bv0 2) ((_ extract 2 1) ((_ extract 3 0) x26))) (= (_ bv0 1) ((_ extract 0 0) ((_ extract 3 0) x26))))))
(let (($x190 (and (= (_ bv0 2) ((_ extract 2 1) ((_ extract 3 0) x10))) (= (_ bv0 1) ((_ extract 0 0) ((_ extract 3 0) x10))))))
(let (($x198 (or $x190 $x197)))
(let (($x181 (and (= (_ bv0 2) ((_ extract 2 1) ((_ extract 3 0) x25))) (= (_ bv0 1) ((_ extract 0 0) ((_ extract 3 0) x25))))))
(let (($x174 (and (= (_ bv0 2) ((_ extract 2 1) ((_ extract 3 0) x9))) (= (_ bv0 1) ((_ extract 0 0) ((_ extract 3 0) x9))))))
(let (($x182 (or $x174 $x181)))
(let (($x165 (and (= (_ bv0 2) ((_ extract 2 1) ((_ extract 3 0) x24))) (= (_ bv0 1) ((_ extract 0 0) ((_ extract 3 0) x24))))))
(let (($x158 (and (= (_ bv0 2) ((_ extract 2 1) ((_ extract 3 0) x8))) (= (_ bv0 1) ((_ extract 0 0) ((_ extract 3 0) x8))))))
(let (($x166 (or $x158 $x165)))
(let (($x149 (and (= (_ bv0 2) ((_ extract 2 1) ((_ extract 3 0) x23))) (= (_ bv0 1) ((_ extract 0 0) ((_ extract 3 0) x23))))))
(let (($x142 (and (= (_ bv0 2) ((_ extract 2 1) ((_ extract 3 0) x7))) (= (_ bv0 1) ((_ extract 0 0) ((_ extract 3 0) x7))))))
(let (($x150 (or $x142 $x149)))
(let (($x133 (and (= (_ bv0 2) ((_ extract 2 1) ((_ extract 3 0) x22))) (= (_ bv0 1) ((_ extract 0 0) ((_ extract 3 0) x22))))))
(let (($x126 (and (= (_ bv0 2) ((_ extract 2 1) ((_ extract 3 0) x6))) (= (_ bv0 1) ((_ extract 0 0) ((_ extract 3 0) x6))))))
(let (($x134 (or $x126 $x133)))
(let (($x117 (and (= (_ bv0 2) ((_ extract 2 1) ((_ extract 3 0) x21))) (= (_ bv0 1) ((_ extract 0 0) ((_ extract 3 0) x21))))))
(let (($x110 (and (= (_ bv0 2) ((_ extract 2 1) ((_ extract 3 0) x5))) (= (_ bv0 1) ((_ extract 0 0) ((_ extract 3 0) x5))))))
(let (($x118 (or $x110 $x117)))
(let (($x101 (and (= (_ bv0 2) ((_ extract 2 1) ((_ extract 3 0) x20))) (= (_ bv0 1) ((_ extract 0 0) ((_ extract 3 0) x20))))))
(let (($x94 (and (= (_ bv0 2) ((_ extract 2 1) ((_ extract 3 0) x4))) (= (_ bv0 1) ((_ extract 0 0) ((_ extract 3 0) x4))))))
(let (($x102 (or $x94 $x101)))
(let (($x85 (and (= (_ bv0 2) ((_ extract 2 1) ((_ extract 3 0) x19))) (= (_ bv0 1) ((_ extract 0 0) ((_ extract 3 0) x19))))))
(let (($x78 (and (= (_ bv0 2) ((_ extract 2 1) ((_ extract 3 0) x3))) (= (_ bv0 1) ((_ extract 0 0) ((_ extract 3 0) x3))))))
(let (($x86 (or $x78 $x85)))
(let (($x69 (and (= (_ bv0 2) ((_ extract 2 1) ((_ extract 3 0) x18))) (= (_ bv0 1) ((_ extract 0 0) ((_ extract 3 0) x18))))))
(let (($x62 (and (= (_ bv0 2) ((_ extract 2 1) ((_ extract 3 0) x2))) (= (_ bv0 1) ((_ extract 0 0) ((_ extract 3 0) x2))))))
(let (($x70 (or $x62 $x69)))
(let (($x53 (and (= (_ bv0 2) ((_ extract 2 1) ((_ extract 3 0) x17))) (= (_ bv0 1) ((_ extract 0 0) ((_ extract 3 0) x17))))))
(let (($x46 (and (= (_ bv0 2) ((_ extract 2 1) ((_ extract 3 0) x1))) (= (_ bv0 1) ((_ extract 0 0) ((_ extract 3 0) x1))))))
(let (($x54 (or $x46 $x53)))
(let (($x38 (and (= (_ bv0 2) ((_ extract 2 1) ((_ extract 3 0) x16))) (= (_ bv0 1) ((_ extract 0 0) ((_ extract 3 0) x16))))))
(let (($x31 (and (= (_ bv0 2) ((_ extract 2 1) ((_ extract 3 0) x0))) (= (_ bv0 1) ((_ extract 0 0) ((_ extract 3 0) x0))))))
(let (($x39 (or $x31 $x38)))
(let (($x280 (and $x39 $x54 $x70 $x86 $x102 $x118 $x134 $x150 $x166 $x182 $x198 $x214 $x230 $x246 $x262 $x278)))
(let (($x135 (and (and (and (and (and (and $x39 $x54) $x70) $x86) $x102) $x118) $x134)))
(let (($x231 (and (and (and (and (and (and $x135 $x150) $x166) $x182) $x198) $x214) $x230)))
(not (= (and (and (and $x231 $x246) $x262) $x278) $x280))))))))))))))))))))))))))))))))))))))))))))))))))))))
(check-sat)
