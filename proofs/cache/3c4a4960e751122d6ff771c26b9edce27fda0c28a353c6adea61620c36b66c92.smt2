(set-logic ALL)
; benchmark generated from python API
(set-info :status unknown)
(declare-fun e0_ () (_ BitVec 12))
(declare-fun e1_ () (_ BitVec 12))
(assert
 (bvsge e0_ (_ bv3584 12)))
(assert
 (bvsge e1_ (_ bv3584 12)))
(assert
 (let ((?x29 ((_ sign_extend 1) e0_)))
 (bvsle ?x29 (_ bv129 13))))
(assert
 (let ((?x35 ((_ sign_extend 1) e1_)))
 (bvsle ?x35 (_ bv129 13))))
(assert
 (let ((?x35 ((_ sign_extend 1) e1_)))
(let ((?x29 ((_ sign_extend 1) e0_)))
(let (($x44 (= (ite (bvslt ?x29 ?x35) ?x35 ?x29) (ite (bvsge ?x29 ?x35) ?x29 ?x35))))
(not $x44)))))
(check-sat)
