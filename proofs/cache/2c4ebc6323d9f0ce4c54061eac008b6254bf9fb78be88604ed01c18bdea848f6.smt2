(set-logic ALL)
; benchmark generated from python API
(set-info :status unknown)
(declare-fun E_ () (_ BitVec 18))
(declare-fun T_ () (_ BitVec 32))
(declare-fun em_ () (_ BitVec 15))
(assert
 (bvsle em_ (_ bv256 15)))
(assert
 (bvsge em_ (_ bv28672 15)))
(assert
 (bvsle E_ (_ bv256 18)))
(assert
 (bvslt T_ (_ bv536870912 32)))
(assert
 (bvsgt T_ (_ bv3758096384 32)))
(assert
 (let ((?x40 ((_ sign_extend 3) em_)))
 (bvsge E_ ?x40)))
(assert
 (let ((?x40 ((_ sign_extend 3) em_)))
(let ((?x49 (bvsub E_ ?x40)))
(let ((?x52 ((_ zero_extend 25) (ite (bvsgt (_ bv0 18) ?x49) (_ bv0 18) ?x49))))
(let ((?x56 (bvashr (bvshl ((_ sign_extend 11) T_) (_ bv7 43)) (ite (bvugt ?x52 (_ bv43 43)) (_ bv43 43) ?x52))))
(let (($x92 (=> (bvsgt (bvsub ((_ sign_extend 2) E_) ((_ sign_extend 2) ?x40)) (_ bv38 20)) (= ?x56 (ite (bvslt T_ (_ bv0 32)) (_ bv8796093022207 43) (_ bv0 43))))))
(let ((?x73 (bvshl ((_ sign_extend 42) ?x56) (_ bv38 85))))
(let ((?x70 (bvshl ((_ sign_extend 53) T_) (bvsub (_ bv45 85) ((_ sign_extend 65) (bvsub ((_ sign_extend 2) E_) ((_ sign_extend 2) ?x40)))))))
(let (($x82 (=> (= (bvsub ((_ sign_extend 2) E_) ((_ sign_extend 2) ?x40)) (_ bv0 20)) (= ?x70 ?x73))))
(let (($x83 (and (bvsge (bvsub ?x70 ?x73) (_ bv0 85)) (bvslt (bvsub ?x70 ?x73) (_ bv274877906944 85)) $x82)))
(let (($x93 (and (bvsle ?x56 (_ bv68719476737 43)) (bvsge ?x56 (_ bv8727373545471 43)) (=> (bvsle (bvsub ((_ sign_extend 2) E_) ((_ sign_extend 2) ?x40)) (_ bv38 20)) $x83) $x92)))
(not $x93))))))))))))
(check-sat)
