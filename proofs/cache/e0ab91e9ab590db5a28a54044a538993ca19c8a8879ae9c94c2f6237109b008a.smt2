(set-logic ALL)
; benchmark generated from python API
(set-info :status unknown)
(declare-fun x0 () (_ BitVec 8))
(declare-fun x1 () (_ BitVec 8))
(assert
 (let ((?x14 (bvmul ((_ sign_extend 9) ((_ sign_extend 1) ((_ extract 7 0) x0))) ((_ sign_extend 9) ((_ sign_extend 1) ((_ extract 7 0) x1))))))
(let ((?x15 ((_ sign_extend 38) ?x14)))
(not (and (bvsle (_ bv72057594037911680 56) ?x15) (bvsge (_ bv16384 56) ?x15))))))
(check-sat)
