(set-logic ALL)
; benchmark generated from python API
(set-info :status unknown)
(declare-fun T1_ () (_ BitVec 32))
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
 (bvslt T1_ (_ bv536870912 32)))
(assert
 (bvsgt T1_ (_ bv3758096384 32)))
(assert
 (let ((?x35 ((_ sign_extend 1) e1_)))
(let ((?x29 ((_ sign_extend 1) e0_)))
(let ((?x52 (ite (bvslt ?x29 ?x35) ?x35 ?x29)))
(let ((?x53 (bvsub ?x52 ?x35)))
(let ((?x56 ((_ zero_extend 21) (ite (bvsgt (_ bv0 13) ?x53) (_ bv0 13) ?x53))))
(let ((?x60 (bvashr ((_ sign_extend 2) T1_) (ite (bvugt ?x56 (_ bv34 34)) (_ bv34 34) ?x56))))
(let ((?x67 (bvsub ((_ sign_extend 2) ?x52) ((_ sign_extend 3) e1_))))
(let ((?x71 ((_ zero_extend 88) ?x67)))
(let ((?x73 ((_ sign_extend 71) T1_)))
(let (($x79 (and (bvsle (bvshl ((_ sign_extend 69) ?x60) ?x71) ?x73) (bvslt ?x73 (bvshl (bvadd ((_ sign_extend 69) ?x60) (_ bv1 103)) ?x71)))))
(let (($x86 (ite (bvsle ?x67 (_ bv33 15)) $x79 (= ?x60 (ite (bvslt T1_ (_ bv0 32)) (_ bv17179869183 34) (_ bv0 34))))))
(not (and (bvsle ?x60 (_ bv536870912 34)) (bvsge ?x60 (_ bv16642998272 34)) $x86))))))))))))))
(check-sat)
