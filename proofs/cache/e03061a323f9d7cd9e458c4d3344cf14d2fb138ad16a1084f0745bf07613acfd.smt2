(set-logic ALL)
; benchmark generated from python API
(set-info :status unknown)
(declare-fun E_ () (_ BitVec 15))
(declare-fun T_ () (_ BitVec 31))
(declare-fun em_ () (_ BitVec 12))
(assert
 (bvsle em_ (_ bv129 12)))
(assert
 (bvsge em_ (_ bv3584 12)))
(assert
 (bvsle E_ (_ bv129 15)))
(assert
 (bvslt T_ (_ bv268435456 31)))
(assert
 (bvsgt T_ (_ bv1879048192 31)))
(assert
 (let ((?x40 ((_ sign_extend 3) em_)))
 (bvsge E_ ?x40)))
(assert
 (let ((?x40 ((_ sign_extend 3) em_)))
(let ((?x49 (bvsub E_ ?x40)))
(let ((?x52 ((_ zero_extend 27) (ite (bvsgt (_ bv0 15) ?x49) (_ bv0 15) ?x49))))
(let ((?x56 (bvashr (bvshl ((_ sign_extend 11) T_) (_ bv7 42)) (ite (bvugt ?x52 (_ bv42 42)) (_ bv42 42) ?x52))))
(let (($x92 (=> (bvsgt (bvsub ((_ sign_extend 2) E_) ((_ sign_extend 2) ?x40)) (_ bv37 17)) (= ?x56 (ite (bvslt T_ (_ bv0 31)) (_ bv4398046511103 42) (_ bv0 42))))))
(let ((?x73 (bvshl ((_ sign_extend 41) ?x56) (_ bv37 83))))
(let ((?x70 (bvshl ((_ sign_extend 52) T_) (bvsub (_ bv44 83) ((_ sign_extend 66) (bvsub ((_ sign_extend 2) E_) ((_ sign_extend 2) ?x40)))))))
(let (($x82 (=> (= (bvsub ((_ sign_extend 2) E_) ((_ sign_extend 2) ?x40)) (_ bv0 17)) (= ?x70 ?x73))))
(let (($x83 (and (bvsge (bvsub ?x70 ?x73) (_ bv0 83)) (bvslt (bvsub ?x70 ?x73) (_ bv137438953472 83)) $x82)))
(let (($x93 (and (bvsle ?x56 (_ bv34359738369 42)) (bvsge ?x56 (_ bv4363686772735 42)) (=> (bvsle (bvsub ((_ sign_extend 2) E_) ((_ sign_extend 2) ?x40)) (_ bv37 17)) $x83) $x92)))
(not $x93))))))))))))
(check-sat)
