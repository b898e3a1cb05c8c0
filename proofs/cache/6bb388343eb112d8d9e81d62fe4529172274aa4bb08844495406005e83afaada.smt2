(set-logic ALL)
; benchmark generated from python API
(set-info :status unknown)
(declare-fun E_ () (_ BitVec 16))
(declare-fun T_ () (_ BitVec 34))
(declare-fun em_ () (_ BitVec 13))
(assert
 (bvsle em_ (_ bv129 13)))
(assert
 (bvsge em_ (_ bv7168 13)))
(assert
 (bvsle E_ (_ bv129 16)))
(assert
 (bvslt T_ (_ bv1073741825 34)))
(assert
 (bvsgt T_ (_ bv16106127359 34)))
(assert
 (let ((?x40 ((_ sign_extend 3) em_)))
 (bvsge E_ ?x40)))
(assert
 (let ((?x40 ((_ sign_extend 3) em_)))
(let ((?x49 (bvsub E_ ?x40)))
(let ((?x52 ((_ zero_extend 29) (ite (bvsgt (_ bv0 16) ?x49) (_ bv0 16) ?x49))))
(let ((?x56 (bvashr (bvshl ((_ sign_extend 11) T_) (_ bv7 45)) (ite (bvugt ?x52 (_ bv45 45)) (_ bv45 45) ?x52))))
(let (($x92 (=> (bvsgt (bvsub ((_ sign_extend 2) E_) ((_ sign_extend 2) ?x40)) (_ bv39 18)) (= ?x56 (ite (bvslt T_ (_ bv0 34)) (_ bv35184372088831 45) (_ bv0 45))))))
(let ((?x73 (bvshl ((_ sign_extend 43) ?x56) (_ bv39 88))))
(let ((?x70 (bvshl ((_ sign_extend 54) T_) (bvsub (_ bv46 88) ((_ sign_extend 70) (bvsub ((_ sign_extend 2) E_) ((_ sign_extend 2) ?x40)))))))
(let (($x82 (=> (= (bvsub ((_ sign_extend 2) E_) ((_ sign_extend 2) ?x40)) (_ bv0 18)) (= ?x70 ?x73))))
(let (($x83 (and (bvsge (bvsub ?x70 ?x73) (_ bv0 88)) (bvslt (bvsub ?x70 ?x73) (_ bv549755813888 88)) $x82)))
(let (($x93 (and (bvsle ?x56 (_ bv137438953601 45)) (bvsge ?x56 (_ bv35046933135231 45)) (=> (bvsle (bvsub ((_ sign_extend 2) E_) ((_ sign_extend 2) ?x40)) (_ bv39 18)) $x83) $x92)))
(not $x93))))))))))))
(check-sat)
