(set-logic ALL)
; benchmark generated from python API
(set-info :status unknown)
(declare-fun Ra_ () (_ BitVec 50))
(declare-fun Ta_ () (_ BitVec 50))
(declare-fun Tb_ () (_ BitVec 50))
(declare-fun x0 () (_ BitVec 32))
(declare-fun x1 () (_ BitVec 32))
(assert
 (bvsle (_ bv1125899906842568 50) Ta_))
(assert
 (bvsge (_ bv64 50) Ta_))
(assert
 (bvsle (_ bv1125899906842568 50) Tb_))
(assert
 (bvsge (_ bv64 50) Tb_))
(assert
 (bvsle (_ bv1125899906840888 50) Ra_))
(assert
 (bvsge (_ bv1984 50) Ra_))
(assert
 (let ((?x43 ((_ sign_extend 1) ((_ extract 31 0) x1))))
 (let ((?x40 ((_ sign_extend 1) ((_ extract 31 0) x0))))
 (bvslt ?x40 ?x43))))
(assert
 (let ((?x63 (bvadd (bvadd ((_ sign_extend 17) ((_ sign_extend 1) ((_ extract 31 0) x0))) Ta_) Ra_)))
(let ((?x68 ((_ extract 31 0) (ite (bvsgt (_ bv1125897759358976 50) ?x63) (_ bv1125897759358976 50) (ite (bvslt (_ bv2147483647 50) ?x63) (_ bv2147483647 50) ?x63)))))
(let ((?x54 (bvadd (bvadd ((_ sign_extend 17) ((_ sign_extend 1) ((_ extract 31 0) x1))) Ta_) Ra_)))
(let ((?x60 ((_ extract 31 0) (ite (bvsgt (_ bv1125897759358976 50) ?x54) (_ bv1125897759358976 50) (ite (bvslt (_ bv2147483647 50) ?x54) (_ bv2147483647 50) ?x54)))))
(bvslt ?x60 ?x68))))))
(check-sat)
