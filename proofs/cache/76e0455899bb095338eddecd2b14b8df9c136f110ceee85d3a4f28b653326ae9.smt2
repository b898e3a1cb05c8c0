(set-logic ALL)
; benchmark generated from python API
(set-info :status unknown)
(declare-fun Ra_ () (_ BitVec 57))
(declare-fun Ta_ () (_ BitVec 57))
(declare-fun Tb_ () (_ BitVec 57))
(declare-fun x0 () (_ BitVec 32))
(declare-fun x1 () (_ BitVec 32))
(assert
 (bvsle (_ bv144115188075839616 57) Ta_))
(assert
 (bvsge (_ bv16384 57) Ta_))
(assert
 (bvsle (_ bv144115188075839616 57) Tb_))
(assert
 (bvsge (_ bv16384 57) Tb_))
(assert
 (bvsle (_ bv144115188075612032 57) Ra_))
(assert
 (bvsge (_ bv245760 57) Ra_))
(assert
 (let ((?x43 ((_ sign_extend 1) ((_ extract 31 0) x1))))
 (let ((?x40 ((_ sign_extend 1) ((_ extract 31 0) x0))))
 (bvslt ?x40 ?x43))))
(assert
 (let ((?x63 (bvadd (bvadd ((_ sign_extend 24) ((_ sign_extend 1) ((_ extract 31 0) x0))) Ta_) Ra_)))
(let ((?x68 ((_ extract 31 0) (ite (bvsgt (_ bv144115185928372224 57) ?x63) (_ bv144115185928372224 57) (ite (bvslt (_ bv2147483647 57) ?x63) (_ bv2147483647 57) ?x63)))))
(let ((?x54 (bvadd (bvadd ((_ sign_extend 24) ((_ sign_extend 1) ((_ extract 31 0) x1))) Ta_) Ra_)))
(let ((?x60 ((_ extract 31 0) (ite (bvsgt (_ bv144115185928372224 57) ?x54) (_ bv144115185928372224 57) (ite (bvslt (_ bv2147483647 57) ?x54) (_ bv2147483647 57) ?x54)))))
(bvslt ?x60 ?x68))))))
(check-sat)
