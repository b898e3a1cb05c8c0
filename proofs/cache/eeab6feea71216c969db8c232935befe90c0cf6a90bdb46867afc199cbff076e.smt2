(set-logic ALL)
; benchmark generated from python API
(set-info :status unknown)
(declare-fun x0 () (_ BitVec 8))
(declare-fun x1 () (_ BitVec 8))
(declare-fun x2 () (_ BitVec 8))
(declare-fun x3 () (_ BitVec 8))
(assert
 (let ((?x23 (bvmul ((_ sign_extend 9) ((_ sign_extend 1) ((_ extract 7 0) x2))) ((_ sign_extend 9) ((_ sign_extend 1) ((_ extract 7 0) x3))))))
 (let ((?x13 (bvmul ((_ sign_extend 9) ((_ sign_extend 1) ((_ extract 7 0) x0))) ((_ sign_extend 9) ((_ sign_extend 1) ((_ extract 7 0) x1))))))
 (bvslt ((_ sign_extend 39) ?x13) ((_ sign_extend 39) ?x23)))))
(assert
 (let ((?x23 (bvmul ((_ sign_extend 9) ((_ sign_extend 1) ((_ extract 7 0) x2))) ((_ sign_extend 9) ((_ sign_extend 1) ((_ extract 7 0) x3))))))
(let ((?x13 (bvmul ((_ sign_extend 9) ((_ sign_extend 1) ((_ extract 7 0) x0))) ((_ sign_extend 9) ((_ sign_extend 1) ((_ extract 7 0) x1))))))
(not (bvslt ((_ sign_extend 38) ?x13) ((_ sign_extend 38) ?x23))))))
(check-sat)
