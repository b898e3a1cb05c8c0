(set-logic ALL)
; benchmark generated from python API
(set-info :status unknown)
(declare-fun x0 () (_ BitVec 8))
(declare-fun x1 () (_ BitVec 8))
(declare-fun x2 () (_ BitVec 8))
(declare-fun x3 () (_ BitVec 8))
(assert
 (let ((?x7 ((_ extract 7 4) x0)))
 (= (_ bv0 4) ?x7)))
(assert
 (let ((?x28 ((_ extract 7 4) x1)))
 (= (_ bv0 4) ?x28)))
(assert
 (let ((?x32 ((_ extract 7 4) x2)))
 (= (_ bv0 4) ?x32)))
(assert
 (let ((?x36 ((_ extract 7 4) x3)))
 (= (_ bv0 4) ?x36)))
(assert
 (let ((?x46 (bvmul ((_ sign_extend 5) ((_ sign_extend 1) ((_ extract 3 0) x0))) ((_ sign_extend 5) ((_ zero_extend 1) ((_ extract 3 0) x1))))))
(let ((?x47 ((_ sign_extend 40) ?x46)))
(not (and (bvsle (_ bv1125899906842504 50) ?x47) (bvsge (_ bv105 50) ?x47))))))
(check-sat)
