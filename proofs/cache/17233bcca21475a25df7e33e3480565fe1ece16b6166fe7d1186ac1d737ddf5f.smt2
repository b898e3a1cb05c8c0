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
 (let ((?x53 (bvmul ((_ sign_extend 5) ((_ sign_extend 1) ((_ extract 3 0) x2))) ((_ sign_extend 5) ((_ zero_extend 1) ((_ extract 3 0) x3))))))
 (let ((?x45 (bvmul ((_ sign_extend 5) ((_ sign_extend 1) ((_ extract 3 0) x0))) ((_ sign_extend 5) ((_ zero_extend 1) ((_ extract 3 0) x1))))))
 (bvslt ((_ sign_extend 41) ?x45) ((_ sign_extend 41) ?x53)))))
(assert
 (let ((?x53 (bvmul ((_ sign_extend 5) ((_ sign_extend 1) ((_ extract 3 0) x2))) ((_ sign_extend 5) ((_ zero_extend 1) ((_ extract 3 0) x3))))))
(let ((?x45 (bvmul ((_ sign_extend 5) ((_ sign_extend 1) ((_ extract 3 0) x0))) ((_ sign_extend 5) ((_ zero_extend 1) ((_ extract 3 0) x1))))))
(not (bvslt ((_ sign_extend 40) ?x45) ((_ sign_extend 40) ?x53))))))
(check-sat)
