(set-logic ALL)
; benchmark generated from python API
(set-info :status unknown)
(declare-fun A0_ () (_ BitVec 56))
(declare-fun A1_ () (_ BitVec 56))
(declare-fun A2_ () (_ BitVec 56))
(declare-fun A3_ () (_ BitVec 56))
(declare-fun A4_ () (_ BitVec 56))
(assert
 (and (and (bvslt A0_ (_ bv2251799813685248 56)) (bvsgt A0_ (_ bv69805794224242688 56))) (and (bvslt A1_ (_ bv2251799813685248 56)) (bvsgt A1_ (_ bv69805794224242688 56))) (and (bvslt A2_ (_ bv2251799813685248 56)) (bvsgt A2_ (_ bv69805794224242688 56))) (and (bvslt A3_ (_ bv2251799813685248 56)) (bvsgt A3_ (_ bv69805794224242688 56))) (and (bvslt A4_ (_ bv68719476736 56)) (bvsgt A4_ (_ bv72057525318451200 56)))))
(assert
 (let ((?x79 (bvadd (bvadd (bvadd (bvadd A0_ A1_) A2_) A3_) A4_)))
(let ((?x73 (bvadd (bvadd (bvadd (bvneg A0_) (bvneg A1_)) (bvneg A2_)) (bvneg A3_))))
(let (($x84 (and (= (bvadd ?x73 (bvneg A4_)) (bvneg ?x79)) (and (distinct ?x79 (_ bv36028797018963968 56)) true))))
(not $x84)))))
(check-sat)
