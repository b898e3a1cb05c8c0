(set-logic ALL)
; benchmark generated from python API
(set-info :status unknown)
(declare-fun Ra_ () (_ BitVec 50))
(declare-fun Ta_ () (_ BitVec 50))
(declare-fun Tb_ () (_ BitVec 50))
(declare-fun x0 () (_ BitVec 32))
(declare-fun x1 () (_ BitVec 32))
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
 (let ((?x42 ((_ sign_extend 1) ((_ extract 31 0) x1))))
 (let ((?x39 ((_ sign_extend 1) ((_ extract 31 0) x0))))
 (bvslt ?x39 ?x42))))
(assert
 (let ((?x62 (bvadd (bvadd ((_ sign_extend 17) ((_ sign_extend 1) ((_ extract 31 0) x0))) Ta_) Ra_)))
(let ((?x67 ((_ extract 31 0) (ite (bvsgt (_ bv1125897759358976 50) ?x62) (_ bv1125897759358976 50) (ite (bvslt (_ bv2147483647 50) ?x62) (_ bv2147483647 50) ?x62)))))
(let ((?x53 (bvadd (bvadd ((_ sign_extend 17) ((_ sign_extend 1) ((_ extract 31 0) x1))) Ta_) Ra_)))
(let ((?x59 ((_ extract 31 0) (ite (bvsgt (_ bv1125897759358976 50) ?x53) (_ bv1125897759358976 50) (ite (bvslt (_ bv2147483647 50) ?x53) (_ bv2147483647 50) ?x53)))))
(bvslt ?x59 ?x67))))))
(check-sat)
