(set-logic ALL)
; benchmark generated from python API
(set-info :status unknown)
(declare-fun A0_ () (_ BitVec 31))
(declare-fun A1_ () (_ BitVec 31))
(declare-fun A2_ () (_ BitVec 31))
(declare-fun A3_ () (_ BitVec 31))
(declare-fun A4_ () (_ BitVec 31))
(assert
 (and (and (bvslt A0_ (_ bv67108864 31)) (bvsgt A0_ (_ bv2080374784 31))) (and (bvslt A1_ (_ bv67108864 31)) (bvsgt A1_ (_ bv2080374784 31))) (and (bvslt A2_ (_ bv67108864 31)) (bvsgt A2_ (_ bv2080374784 31))) (and (bvslt A3_ (_ bv67108864 31)) (bvsgt A3_ (_ bv2080374784 31))) (and (bvslt A4_ (_ bv33554432 31)) (bvsgt A4_ (_ bv2113929216 31)))))
(assert
 (let ((?x79 (bvadd (bvadd (bvadd (bvadd A0_ A1_) A2_) A3_) A4_)))
(let ((?x73 (bvadd (bvadd (bvadd (bvneg A0_) (bvneg A1_)) (bvneg A2_)) (bvneg A3_))))
(let (($x84 (and (= (bvadd ?x73 (bvneg A4_)) (bvneg ?x79)) (and (distinct ?x79 (_ bv1073741824 31)) true))))
(not $x84)))))
(check-sat)
