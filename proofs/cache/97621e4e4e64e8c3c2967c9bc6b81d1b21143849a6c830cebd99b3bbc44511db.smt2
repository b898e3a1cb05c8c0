(set-logic ALL)
; benchmark generated from python API
(set-info :status unknown)
(declare-fun Ra_ () (_ BitVec 50))
(declare-fun Ta_ () (_ BitVec 50))
(declare-fun Tb_ () (_ BitVec 50))
(declare-fun x0 () (_ BitVec 32))
(assert
 (bvsle (_ bv0 50) Ta_))
(assert
 (bvsge (_ bv225 50) Ta_))
(assert
 (bvsle (_ bv0 50) Tb_))
(assert
 (bvsge (_ bv225 50) Tb_))
(assert
 (bvsle (_ bv0 50) Ra_))
(assert
 (bvsge (_ bv6975 50) Ra_))
(assert
 (bvslt Ta_ Tb_))
(assert
 (let ((?x54 (bvadd (bvadd ((_ sign_extend 17) ((_ sign_extend 1) ((_ extract 31 0) x0))) Ta_) Ra_)))
(let ((?x59 ((_ extract 31 0) (ite (bvsgt (_ bv1125897759358976 50) ?x54) (_ bv1125897759358976 50) (ite (bvslt (_ bv2147483647 50) ?x54) (_ bv2147483647 50) ?x54)))))
(let ((?x46 (bvadd (bvadd ((_ sign_extend 17) ((_ sign_extend 1) ((_ extract 31 0) x0))) Tb_) Ra_)))
(let ((?x52 ((_ extract 31 0) (ite (bvsgt (_ bv1125897759358976 50) ?x46) (_ bv1125897759358976 50) (ite (bvslt (_ bv2147483647 50) ?x46) (_ bv2147483647 50) ?x46)))))
(bvslt ?x52 ?x59))))))
(check-sat)
